"""The probe's stream scenarios: ``two_elicitations`` (one call that elicits twice) and
``replay_routing`` (a stream resumed with ``Last-Event-ID`` after its request id was reused):
their verdicts on recorded runs, and the probe against the official SDK's server (with an event
store) and ours, over real HTTP on loopback."""

from __future__ import annotations

import asyncio

import pytest

from mcp_inflight import probe as P

CAL = {"tool": "slow", "steps": 4, "duration": 2.0}

#: What the probe finds on our server, scenario by scenario (the classes found), with the
#: reason where that is a defect we know of.  Flip an entry when the runtime changes.
OURS_EXPECTED = {
    # each server-to-client request under its own server-minted id: both elicitations go out
    "two_elicitations": set(),
    "replay_routing": set(),  # the duplicate is refused (409); the replay carries A's only
}


def elicit(sid):
    return {"jsonrpc": "2.0", "id": sid, "method": "elicitation/create", "params": {}}


def prog(token, n):
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n},
    }


def result(rid, error=False):
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"content": [{"type": "text", "text": "x"}], "isError": error},
    }


def post(name, rid, events, token=None, status=200, resumed_from=None, last=None, body=None):
    evs = []
    for t, m, *eid in events:
        e = {"t": t, "msg": m}
        if eid:
            e["id"] = eid[0]
        evs.append(e)
    return {
        "name": name,
        "sender": "rogue" if name == "B" else "client",
        "method": "GET" if resumed_from else "tools/call",
        "id": rid,
        "token": token,
        "sent": 0.0,
        "status": status,
        "head": 0.01,
        "content_type": "text/event-stream",
        "body": body,
        "events": evs,
        "end": evs[-1]["t"] if evs else 0.0,
        "how": "closed",
        "last_event_id": last,
        "resumed_from": resumed_from,
    }


def run(*posts):
    return {"posts": list(posts), "cancels": [], "aborts": []}


def classes(v):
    return {c for c, _ in v.findings}


def test_two_elicitations_verdicts():
    ok = run(post("Q", 81, [(0.1, elicit(1)), (0.2, elicit(2)), (0.3, result(81))]))
    assert P.judge("two_elicitations", None, ok, CAL).findings == []
    one = run(post("Q", 81, [(0.1, elicit(1)), (0.3, result(81, error=True))]))
    v = P.judge("two_elicitations", None, one, CAL)
    assert classes(v) == {"second_request_failed"} and "received 1" in v.findings[0][1]
    same = run(post("Q", 81, [(0.1, elicit(1)), (0.2, elicit(1)), (0.3, result(81))]))
    assert classes(P.judge("two_elicitations", None, same, CAL)) == {"second_request_failed"}
    lost = run(post("Q", 81, [(0.1, elicit(1)), (0.2, elicit(2))]))
    assert classes(P.judge("two_elicitations", None, lost, CAL)) == {"lost_response"}


def replay_run(b_events, r_events, b_status=200, r_status=200, idb=41):
    a = post("A", 41, [(0.1, prog("tA", 1), "a.1")], token="tA", last="a.1")
    b = post("B", idb, b_events, token="tB", status=b_status)
    r = post("R", 41, r_events, token="tA", status=r_status, resumed_from="a.1")
    return run(a, b, r)


GOOD_R = [(0.5, prog("tA", 2), "a.2"), (0.6, result(41), "a.3")]
GOOD_B = [(0.4, prog("tB", 1)), (0.9, result(42))]


def test_replay_routing_verdicts():
    control = replay_run(GOOD_B, GOOD_R, idb=42)
    refused = replay_run([], GOOD_R, b_status=409)
    v = P.judge("replay_routing", control, refused, CAL)
    assert v.status == "judged" and v.findings == [] and v.refusal["status"] == 409
    # what a store keyed by request id does: B's events replayed on A's resumed stream
    mixed = replay_run(
        [], [(0.5, prog("tA", 2), "x"), (0.55, prog("tB", 1), "y"), (0.6, result(41), "z")]
    )
    v = P.judge("replay_routing", control, mixed, CAL)
    assert classes(v) == {"replay_misrouted"} and "B's token" in v.findings[0][1]
    again = replay_run(GOOD_B, [(0.5, prog("tA", 1), "a.1"), *GOOD_R])
    v = P.judge("replay_routing", control, again, CAL)
    assert classes(v) == {"replay_misrouted"} and "again" in v.findings[0][1]
    two = replay_run([], [*GOOD_R, (0.9, result(41), "a.4")])
    assert classes(P.judge("replay_routing", control, two, CAL)) == {"replay_misrouted"}
    gone = replay_run(GOOD_B, [], r_status=400)
    assert classes(P.judge("replay_routing", control, gone, CAL)) == {"replay_misrouted"}
    nothing = replay_run(GOOD_B, [(0.5, prog("tA", 2), "a.2")])
    assert classes(P.judge("replay_routing", control, nothing, CAL)) == {"lost_response"}
    # a control whose resume failed says nothing about ids
    bad = replay_run(GOOD_B, [], r_status=405, idb=42)
    v = P.judge("replay_routing", bad, mixed, CAL)
    assert v.status == "not_judged" and "HTTP 405" in v.note


@pytest.mark.slow
def test_stream_scenarios_on_the_official_sdk_and_on_ours():
    """The official SDK (``streamable_http_app(event_store=...)``, a store keyed by its stream
    ids, which are request ids) and our server (its default event store), both probed at once."""
    from support.http_server import build_server, start
    from support.servers import sdk_server, stop

    server = build_server()

    @server.tool()
    async def ask_twice(ctx, label: str) -> str:
        first = await ctx.elicit(f"{label}: first?")
        second = await ctx.elicit(f"{label}: second?")
        return f"ask_twice:{label}:{first.get('action')}:{second.get('action')}"

    ours = start(server)
    proc, sdk_url = sdk_server("--event-store")
    try:

        def target(url):
            args = {"label": "p", "steps": 4, "delay": 0.3}
            return P.Target(url, "slow", args, None, {}, {})

        async def both():
            chosen = ("two_elicitations", "replay_routing")
            return await asyncio.gather(
                P.probe(target(sdk_url), chosen), P.probe(target(ours.url), chosen)
            )

        sdk, mine = asyncio.run(both())
    finally:
        stop(proc)
        ours.stop()

    def by_scenario(doc):
        return {s["scenario"]: s for s in doc["scenarios"]}

    s = by_scenario(sdk)
    assert s["two_elicitations"]["status"] == "judged" and s["two_elicitations"]["findings"] == []
    rr = s["replay_routing"]
    assert rr["status"] == "judged" and rr["refusal"] is None  # the SDK admits the duplicate
    found = {f["class"] for f in rr["findings"]}
    assert "replay_misrouted" in found, rr
    assert any("B's token" in f["evidence"] for f in rr["findings"])

    m = by_scenario(mine)
    for name, expected in OURS_EXPECTED.items():
        assert m[name]["status"] == "judged", m[name]
        assert {f["class"] for f in m[name]["findings"]} == expected, m[name]
    assert m["replay_routing"]["refusal"]["status"] == 409
