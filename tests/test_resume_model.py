"""model/resume.py: resumable 2025-11-25 streams and the event store.

``named-streams`` holds every property and reaches every witness (explored, and proved by
induction); each mutant breaks what it removes, with a shortest trace; and
``impl/events.py``'s MemoryEventStore replays exactly what ``named-streams`` replays along every
transition of the explored space.  Fed the stream names the defective designs use (a request id,
one namespace for all sessions), the same store replays what the model's mutants replay, and
disagrees with ``named-streams``: the model's mutants are those servers' behaviour.
"""

from __future__ import annotations

import copy
import json

import pytest

from mcp_inflight.impl.events import MemoryEventStore
from mcp_inflight.model import resume
from mcp_inflight.proofs.declared import check, drive, explore, prove, trace_text

BROKEN = {
    "request-id-streams": {"replay_carries_own_events"},
    "shared-store": {"replay_carries_own_events"},
    "replay-all": {"replay_carries_own_events"},
    "inclusive-replay": {"delivered_once"},
    "no-reattach": {"resumed_response_delivered"},
}

#: the default tests' bound: three events reach every witness and every mutant's failure
SMALL = {"events": 3}


def _failing(res):
    return {p.name for p in res.spec.props if res.verdicts[p.name] == "fails"}


def test_named_streams_holds_everything_and_reaches_every_witness():
    res = explore(resume.spec("named-streams", **SMALL))
    assert res.ok, res.verdicts
    assert all(res.coverage.values()), res.coverage
    tr = res.traces["response_replayed"]
    assert [s["action"] for s in tr] == ["send", "drop", "respond", "resume"]


@pytest.mark.parametrize("design", sorted(BROKEN))
def test_each_mutant_breaks_what_it_removes(design):
    res = explore(resume.spec(design, **SMALL))
    assert _failing(res) == BROKEN[design]
    for name in BROKEN[design]:
        assert res.traces[name][0]["action"] == "send"
    json.dumps(res.to_json())


def test_request_id_streams_trace_is_the_sdk_defect():
    """The shortest trace: the client's stream drops, its request responds while detached, the
    rogue reuses the answered id, and the client's resume gets the rogue's priming event."""
    res = explore(resume.spec("request-id-streams", **SMALL))
    trace = res.traces["replay_carries_own_events"]
    assert [(s["action"], s["args"]["q"]) for s in trace] == [
        ("send", 0),
        ("drop", 0),
        ("respond", 0),
        ("send", 2),
        ("resume", 0),
    ]
    text = "\n".join(trace_text(trace))
    assert "got[r0(s0),e2]: 0 -> 1" in text


def test_named_streams_is_proved_by_induction():
    res = prove(resume.spec("named-streams", **SMALL))
    assert res.ok, res.verdicts
    assert not res.dropped


# --- the runtime against the model ----------------------------------------------------------

#: how the runtime store is fed, per design: the session and stream name of request q
FEEDS = {
    "named-streams": lambda q, n_s: (f"s{q % n_s}", f"p{q}"),  # impl/http.py's names
    "request-id-streams": lambda q, n_s: (f"s{q % n_s}", "1"),  # the stream is the request id
    "shared-store": lambda q, n_s: ("shared", "1"),  # one namespace, ids without the session
    "replay-all": lambda q, n_s: (f"s{q % n_s}", "all"),  # one stream per session
}


class World:
    def __init__(self) -> None:
        self.store = MemoryEventStore()
        self.eids: dict[int, str] = {}  # model event -> runtime event id
        self.index: dict[str, int] = {}  # and back

    def copy(self) -> World:
        return copy.deepcopy(self)


def runtime_step(sp, feed, seen: set[str] | None = None):
    """The store's counterpart of each move; ``seen`` collects what the replays carried
    (``empty``, ``events``, ``response``)."""
    n_s, n_e = sp.bounds["sessions"], sp.bounds["events"]
    seen = set() if seen is None else seen

    def step(w: World, pre, m, post) -> list[str]:
        q = m.kw["q"]
        session, stream = feed(q, n_s)
        if m.name in ("send", "emit", "respond"):
            data = b"" if m.name == "send" else f"{q}:{m.name}:{pre.nev}".encode()
            eid = w.store.append(session, stream, data)
            w.eids[pre.nev], w.index[eid] = eid, pre.nev
            return []
        if m.name != "resume":
            return []
        got_stream, events = w.store.replay(session, w.eids[pre.last[q]])
        runtime = [w.index[eid] for eid, _ in events]
        seen.add("events" if events else "empty")
        if any(d.endswith(b":respond:" + str(w.index[eid]).encode()) for eid, d in events):
            seen.add("response")
        model = [e for e in range(n_e) if post.got[q * n_e + e] > pre.got[q * n_e + e]]
        out = []
        if runtime != model:
            out.append(f"{m}: the store replays {runtime}, the model {model}")
        if got_stream != stream:
            out.append(f"{m}: the store names stream {got_stream!r}, not {stream!r}")
        return out

    return step


def _drive(design: str, feed: str, seen: set[str] | None = None, **bounds):
    sp = resume.spec(design, **bounds)
    return drive(sp, World, runtime_step(sp, FEEDS[feed], seen), World.copy)


@pytest.mark.parametrize("design", sorted(FEEDS))
def test_runtime_store_replays_what_the_model_replays(design):
    seen: set[str] = set()
    assert _drive(design, design, seen, **SMALL) == []
    assert seen == {"empty", "events", "response"}  # not vacuous


@pytest.mark.parametrize("design", ["request-id-streams", "shared-store", "inclusive-replay"])
def test_runtime_disagrees_with_each_mutant(design):
    problems = _drive(design, "named-streams", **SMALL)
    assert problems and "the store replays" in problems[0]


@pytest.mark.slow
def test_named_streams_at_larger_bounds():
    """Four events (the command line's default): explored, proved, and the store driven along
    every transition."""
    bounds = {"events": 4}
    res = check(resume.spec("named-streams", **bounds))
    assert res.ok, res.to_json()
    assert _drive("named-streams", "named-streams", **bounds) == []


def test_the_check_section_of_the_small_models_is_computed_then_cached(monkeypatch, tmp_path):
    """``check``'s section: both safe designs explored and proved; a second call reads the
    checkers' cache (an entry planted under the same key is what it returns)."""
    from dataclasses import replace

    from mcp_inflight import check_declared
    from mcp_inflight.proofs import cache

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    plan = {"rounds": ["sealed"], "resume": ["named-streams"]}  # the two quickest to prove
    fresh = check_declared.section("refresh", plan)
    assert [r.ok for r in fresh] == [True, True]
    text = check_declared.text(fresh)
    assert "rounds sealed" in text and "resume named-streams" in text
    # proved by induction on the finite universe of the bounds, and said so
    assert "proved at bounds" in text and "FAILED" not in text
    assert "proved\n" not in text.replace("proved at bounds", "")
    planted = replace(fresh[0], states=-1)
    cache.store("declared", check_declared.key("rounds", "sealed", True), planted)
    assert check_declared.section("use", plan) == [planted, fresh[1]]
    # --no-prove is a run of its own, cached apart: the planted proof is not what it reads
    assert check_declared.section("use", plan, prove=False)[0].states == fresh[0].states
    # each model's safe design comes first
    assert [check_declared.designs_of(m)[0] for m in plan] == ["sealed", "named-streams"]
