"""``mcp-inflight probe``: its verdicts on recorded stream contents, and the whole probe against
real servers on loopback (the official ``mcp`` SDK server without and with the guard, and
``mcp-inflight serve``)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
import time

import pytest

from mcp_inflight import probe as P

HERE = pathlib.Path(__file__).parent
CAL = {
    "tool": "slow",
    "args": {},
    "steps": 4,
    "duration": 2.0,
    "elicit_tool": "ask",
    "elicits": 1,
    "elicit_after": 1.0,
    "elicit_duration": 1.05,
}


# --- records, as the recorder writes them -----------------------------------------------------


def prog(token, n, total=4):
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n, "total": total},
    }


def result(rid, text="done"):
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"content": [{"type": "text", "text": text}], "isError": False},
    }


def error(rid, code, message="error"):
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def elicit(sid):
    return {
        "jsonrpc": "2.0",
        "id": sid,
        "method": "elicitation/create",
        "params": {"message": "go on?", "requestedSchema": {"type": "object", "properties": {}}},
    }


def post(
    name,
    rid,
    sent,
    events=(),
    *,
    token=None,
    status=200,
    how="closed",
    end=None,
    body=None,
    method="tools/call",
    sender="client",
    head=None,
):
    events = [{"t": t, "msg": m} for t, m in events]
    if end is None:
        end = events[-1]["t"] if events else sent
    return {
        "name": name,
        "sender": sender,
        "method": method,
        "id": rid,
        "token": token,
        "sent": sent,
        "status": status,
        "head": sent + 0.005 if head is None else head,
        "content_type": "text/event-stream" if status == 200 else "application/json",
        "body": body,
        "events": events,
        "end": end,
        "how": how,
    }


def steps(token, start, every=0.5, n=4, first=1):
    return [(start + every * (k - first + 1), prog(token, k)) for k in range(first, n + 1)]


def own_run(rid_a, rid_b, b_sent=1.0):
    """Two calls of the slow tool, each served on its own stream (A at 0, B at b_sent)."""
    a = post("A", rid_a, 0.0, steps("tA", 0.0) + [(2.01, result(rid_a))], token="tA")
    b = post(
        "B",
        rid_b,
        b_sent,
        steps("tB", b_sent) + [(b_sent + 2.01, result(rid_b))],
        token="tB",
        sender="rogue",
    )
    return {"posts": [a, b], "cancels": [], "aborts": []}


def classes(v):
    return {c for c, _ in v.findings}


REFUSAL_409 = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "id 11 is in flight"},
}


# --- verdicts on recorded contents ------------------------------------------------------------


def test_refusal_with_409_is_clean_and_reported():
    control = own_run(11, 12)
    a = post("A", 11, 0.0, steps("tA", 0.0) + [(2.01, result(11))], token="tA")
    b = post("B", 11, 1.0, [], token="tB", status=409, body=REFUSAL_409, sender="rogue")
    v = P.judge("duplicate_progress", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert v.status == "judged" and v.findings == []
    assert v.refusal == {"status": 409, "code": -32600, "message": "id 11 is in flight", "id": None}


def test_refusal_with_400_instead_of_409_is_a_refusal_too():
    control = own_run(11, 12)
    a = post("A", 11, 0.0, steps("tA", 0.0) + [(2.01, result(11))], token="tA")
    b = post("B", 11, 1.0, [], token="tB", status=400, body=dict(REFUSAL_409), sender="rogue")
    v = P.judge("duplicate_progress", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert v.findings == []
    assert v.refusal["status"] == 400 and v.refusal["code"] == -32600
    report = P.summarize("http://x/mcp", [v], cal=CAL)
    assert report["ok"] is True and report["exit"] == 0
    assert report["refusal"]["status"] == 400
    assert "HTTP 400 JSON-RPC -32600" in P.render_text(report)


def test_refusal_as_an_error_event_on_the_stream():
    b = post("B", 11, 1.0, [(1.01, error(None, -32600, "duplicate"))], token="tB", sender="rogue")
    assert P.refusal_of(b) == {"status": 200, "code": -32600, "message": "duplicate", "id": None}


def test_overwriting_server_misroutes_progress_and_response_and_loses_one():
    # What the official SDK does: B overwrites the stream slot under id 11; A's remaining progress
    # and A's response go to B's POST, which then closes; A's POST waits for ever.
    control = own_run(11, 12)
    a = post("A", 11, 0.0, steps("tA", 0.0, n=2), token="tA", how="timeout", end=6.0)
    b = post(
        "B",
        11,
        1.0,
        [(1.5, prog("tA", 3)), (1.6, prog("tB", 1)), (2.0, prog("tA", 4)), (2.01, result(11))],
        token="tB",
        sender="rogue",
    )
    v = P.judge("duplicate_progress", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert classes(v) == {"misrouted_notification", "misrouted_response", "lost_response"}
    text = " ".join(e for _, e in v.findings)
    assert "2 progress notification(s) for A's token" in text
    assert "can only be A's" in text
    assert v.refusal is None


def test_server_that_admits_the_duplicate_but_routes_each_on_its_own_stream_is_clean():
    control = own_run(11, 12)
    v = P.judge("duplicate_progress", control, own_run(11, 11), CAL)
    assert v.findings == [] and v.refusal is None


def test_a_failed_control_means_not_judged_and_exit_2():
    control = own_run(11, 12)
    control["posts"][1]["events"] = control["posts"][1]["events"][:2]  # B lost its response
    control["posts"][1]["how"] = "timeout"
    v = P.judge("duplicate_progress", control, own_run(11, 11), CAL)
    assert v.status == "not_judged" and "B (id 12) got no response" in v.note
    report = P.summarize("http://x/mcp", [v], cal=CAL)
    assert report["ok"] is False and report["exit"] == 2 and report["status"] == "untested"


def test_response_routing_by_result_shape():
    control = {
        "posts": [
            post("A", 21, 0.0, steps("tA", 0.0) + [(2.01, result(21))], token="tA"),
            post(
                "B",
                22,
                0.6,
                [(0.61, {"jsonrpc": "2.0", "id": 22, "result": {}})],
                method="ping",
                sender="rogue",
            ),
        ],
        "cancels": [],
        "aborts": [],
    }
    # B's ping POST gets A's tools/call result; A's POST gets the ping's empty result.
    a = post(
        "A",
        21,
        0.0,
        steps("tA", 0.0, n=1) + [(0.61, {"jsonrpc": "2.0", "id": 21, "result": {}})],
        token="tA",
    )
    b = post("B", 21, 0.6, [(2.01, result(21))], method="ping", sender="rogue")
    v = P.judge("response_routing", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert classes(v) == {"misrouted_response", "lost_response"}
    # the SDK's variant: B gets its ping answer, A's stream goes quiet
    a = post("A", 21, 0.0, steps("tA", 0.0, n=1), token="tA", how="timeout", end=5.0)
    b = post("B", 21, 0.6, [(0.61, {"jsonrpc": "2.0", "id": 21, "result": {}})], method="ping")
    v = P.judge("response_routing", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert classes(v) == {"lost_response"}
    v = P.judge("response_routing", control, control, CAL)
    assert v.findings == []


def _cancel_control():
    a = post(
        "A",
        31,
        0.0,
        steps("tA", 0.0, n=1) + [(0.8, error(31, -32800, "Request cancelled"))],
        token="tA",
    )
    b = post("B", 32, 0.6, steps("tB", 0.6) + [(2.61, result(32))], token="tB", sender="rogue")
    return {"posts": [a, b], "cancels": [{"t": 0.75, "id": 31, "means": "A"}], "aborts": []}


def test_cancel_that_hits_the_other_request_is_misdirected():
    a = post("A", 31, 0.0, steps("tA", 0.0, n=1), token="tA", how="timeout", end=6.0)
    b = post(
        "B",
        31,
        0.6,
        [(1.1, prog("tB", 1)), (1.2, error(31, -32800, "Request cancelled"))],
        token="tB",
        sender="rogue",
    )
    test = {"posts": [a, b], "cancels": [{"t": 1.15, "id": 31, "means": "A"}], "aborts": []}
    v = P.judge("cancel_routing", _cancel_control(), test, CAL)
    assert classes(v) == {"cancel_misdirected"}
    assert "never cancelled" in v.findings[0][1] and "-32800" in v.findings[0][1]


def test_cancel_that_leaves_its_target_running_is_misdirected():
    a = post("A", 31, 0.0, steps("tA", 0.0) + [(2.01, result(31))], token="tA")
    b = post("B", 31, 0.6, [], token="tB", status=409, body=REFUSAL_409, sender="rogue")
    test = {"posts": [a, b], "cancels": [{"t": 0.7, "id": 31, "means": "A"}], "aborts": []}
    v = P.judge("cancel_routing", _cancel_control(), test, CAL)
    assert classes(v) == {"cancel_misdirected"}
    assert "kept reporting progress" in " ".join(e for _, e in v.findings)


def test_cancel_with_refused_duplicate_and_target_stopped_is_clean():
    a = post("A", 31, 0.0, steps("tA", 0.0, n=1) + [(0.8, error(31, -32800))], token="tA")
    b = post("B", 31, 0.6, [], token="tB", status=409, body=REFUSAL_409, sender="rogue")
    test = {"posts": [a, b], "cancels": [{"t": 0.75, "id": 31, "means": "A"}], "aborts": []}
    v = P.judge("cancel_routing", _cancel_control(), test, CAL)
    assert v.findings == [] and v.refusal["status"] == 409


def test_cancel_routing_is_not_judged_when_the_server_ignores_cancels():
    control = _cancel_control()
    control["posts"][0] = post("A", 31, 0.0, steps("tA", 0.0) + [(2.01, result(31))], token="tA")
    v = P.judge("cancel_routing", control, control, CAL)
    assert v.status == "not_judged" and "did not stop A" in v.note


def test_duplicate_admitted_only_after_the_first_finished_is_not_judged():
    # A slow machine: B's POST was answered only after A's response, so B was rightly admitted.
    control = own_run(11, 12)
    a = post("A", 11, 0.0, steps("tA", 0.0) + [(2.01, result(11))], token="tA")
    b = post("B", 11, 1.0, steps("tB", 2.1) + [(4.2, result(11))], token="tB", head=2.05)
    v = P.judge("duplicate_progress", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert v.status == "not_judged" and "did not overlap" in v.note and v.findings == []


def test_cancel_sent_after_the_target_finished_is_not_judged():
    control = _cancel_control()
    control["cancels"][0]["t"] = 2.5
    control["posts"][0] = post("A", 31, 0.0, steps("tA", 0.0) + [(2.01, result(31))], token="tA")
    v = P.judge("cancel_routing", control, control, CAL)
    assert v.status == "not_judged" and "before the cancel at 2.50s" in v.note


def test_collateral_close():
    control = {
        "posts": [
            post("A", 61, 0.0, steps("tA", 0.0, n=1), token="tA", how="aborted", end=0.7),
            post("B", 62, 0.6, steps("tB", 0.6) + [(2.61, result(62))], token="tB"),
        ],
        "cancels": [],
        "aborts": [{"t": 0.7, "post": "A"}],
    }
    a = post("A", 61, 0.0, steps("tA", 0.0, n=1), token="tA", how="aborted", end=0.7)
    b = post("B", 61, 0.6, [(1.1, prog("tB", 1))], token="tB", end=0.71)
    test = {"posts": [a, b], "cancels": [], "aborts": [{"t": 0.7, "post": "A"}]}
    v = P.judge("collateral_close", control, test, CAL)
    assert classes(v) == {"collateral_close"}
    assert "1 of 4" in v.findings[0][1]
    v = P.judge("collateral_close", control, control, CAL)
    assert v.findings == []


def test_7_and_string_7_are_different_ids():
    control = own_run(8, "9")
    # refused: the server took "7" for the in-flight 7
    b = post("B", "7", 1.0, [], token="tB", status=409, body=REFUSAL_409)
    a = post("A", 7, 0.0, steps("tA", 0.0) + [(2.01, result(7))], token="tA")
    v = P.judge("id_types", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert classes(v) == {"id_type_confusion"}
    # served, but answered with the wrong type of id
    run = own_run(7, "7")
    run["posts"][1]["events"][-1]["msg"]["id"] = 7
    v = P.judge("id_types", control, run, CAL)
    assert classes(v) == {"id_type_confusion"}
    assert "answered with id 7" in v.findings[0][1]
    # both served on their own streams with their own ids
    v = P.judge("id_types", control, own_run(7, "7"), CAL)
    assert v.findings == []


def test_reuse_after_the_response():
    control = {
        "posts": [
            post("A", 71, 0.0, steps("tA", 0.0) + [(2.01, result(71))], token="tA"),
            post("B", 72, 2.02, steps("tB", 2.02) + [(4.03, result(72))], token="tB"),
        ],
        "cancels": [],
        "aborts": [],
    }
    a = post("A", 71, 0.0, steps("tA", 0.0) + [(2.01, result(71))], token="tA")
    b = post("B", 71, 2.02, [], token="tB", status=409, body=REFUSAL_409)
    v = P.judge("reuse", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert classes(v) == {"reuse_refused"}
    b = post("B", 71, 2.02, steps("tB", 2.02) + [(4.03, result(71))], token="tB")
    v = P.judge("reuse", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL)
    assert v.findings == []


def test_server_request_routing_by_time():
    ok_a = post("A", 51, 0.0, [(1.0, elicit(1)), (1.05, result(51))], token="tA")
    ok_b = post("B", 52, 0.5, [(1.5, elicit(2)), (1.55, result(52))], token="tB", sender="rogue")
    control = {"posts": [ok_a, ok_b], "cancels": [], "aborts": []}
    # A's elicitation (asked 1.0s after A) arrives on B's POST, sent 0.5s after A
    a = post("A", 51, 0.0, [], token="tA", how="timeout", end=5.0)
    b = post("B", 51, 0.5, [(1.0, elicit(1)), (1.05, result(51))], token="tB", sender="rogue")
    test = {"posts": [a, b], "cancels": [], "aborts": []}
    v = P.judge("server_request_routing", control, test, CAL)
    assert classes(v) == {"misrouted_server_request", "lost_response"}
    v = P.judge("server_request_routing", control, control, CAL)
    assert v.findings == []


def test_summary_has_one_entry_per_class_and_the_documented_keys():
    v = P.judge("duplicate_progress", own_run(11, 12), own_run(11, 11), CAL)
    report = P.summarize("http://127.0.0.1:1/mcp", [v], {"server_request_routing": "no tool"}, CAL)
    assert {"ok", "target", "findings", "refusal"} <= set(report)
    assert [f["class"] for f in report["findings"]] == list(P.CLASSES)
    assert all(set(f) == {"class", "found", "evidence"} for f in report["findings"])
    json.dumps(report)


def test_sse_parser_reads_multiline_data_and_skips_comments():
    import asyncio

    class R:
        async def aiter_bytes(self):
            for line in [
                ": comment",
                "event: message",
                'data: {"a":',
                "data: 1}",
                "",
                "id: 3",
                'data:{"b":2}',
                "",
            ]:
                yield (line + "\n").encode()

    got = []
    asyncio.run(P.read_sse(R(), got.append))
    assert got == [{"a": 1}, {"b": 2}]


# --- against real servers ---------------------------------------------------------------------


def probe_cli(*args):
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "probe", *args, "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return p.returncode, json.loads(p.stdout), p.stderr


def found(doc):
    return {f["class"] for f in doc["findings"] if f["found"]}


HAVE_SERVE = importlib.util.find_spec("mcp_inflight.serve") is not None


def _free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def serve_url():
    """``mcp-inflight serve`` on a free loopback port (None while the module does not exist)."""
    if not HAVE_SERVE:
        yield None
        return
    import socket

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def probe_runs(sdk_bare, sdk_guarded, serve_url, tmp_path_factory):
    """The whole probe against each server, the three running at once (as separate processes):
    name -> (exit status, JSON report, seconds); under ``"junit"`` the path of each probe's
    ``--junit-xml`` file."""
    urls = {"bare": sdk_bare, "guarded": sdk_guarded, "serve": serve_url}
    where = tmp_path_factory.mktemp("probe-junit")
    junit = {name: where / f"{name}.xml" for name in urls}
    t0 = time.monotonic()
    procs = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcp_inflight",
                "probe",
                url,
                "--json",
                "--quiet",
                "--junit-xml",
                str(junit[name]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for name, url in urls.items()
        if url is not None
    }
    out = {}
    for name, proc in procs.items():
        stdout, _ = proc.communicate(timeout=120)
        out[name] = (proc.returncode, json.loads(stdout), time.monotonic() - t0)
    out["junit"] = junit
    return out


def test_probe_finds_the_official_sdk_misrouting(probe_runs, sdk_bare):
    code, doc, seconds = probe_runs["bare"]
    assert code == 1, doc
    assert doc["ok"] is False and doc["target"] == sdk_bare
    assert {"misrouted_notification", "misrouted_response", "cancel_misdirected"} <= found(doc)
    assert {"lost_response", "collateral_close", "id_type_confusion"} <= found(doc)
    assert "reuse_refused" not in found(doc)
    assert doc["refusal"] is None
    assert seconds < 60


def test_probe_is_clean_on_the_guarded_sdk_server(probe_runs):
    code, doc, _ = probe_runs["guarded"]
    assert code == 0, json.dumps(doc, indent=1)[:4000]
    assert doc["ok"] is True and found(doc) == set()
    assert doc["refusal"]["status"] == 409 and doc["refusal"]["code"] == -32600
    judged = {s["scenario"]: s for s in doc["scenarios"]}
    # no event store on this server: its streams are not resumable, replay_routing does not apply
    assert set(doc["not_applicable"]) == {"replay_routing"}
    assert "no SSE event ids" in doc["not_applicable"]["replay_routing"]
    assert set(judged) == set(P.SCENARIOS) - {"replay_routing"}
    assert all(s["status"] == "judged" for s in judged.values())
    assert judged["reuse"]["findings"] == [] and judged["reuse"]["refusal"] is None


@pytest.mark.skipif(
    not HAVE_SERVE, reason="mcp_inflight.serve (mcp-inflight serve) is not there yet"
)
def test_probe_is_clean_on_mcp_inflight_serve(probe_runs):
    code, doc, _ = probe_runs["serve"]
    assert code == 0, json.dumps(doc, indent=1)[:4000]
    assert found(doc) == set() and doc["refusal"]["status"] == 409
    assert all(s["status"] == "judged" for s in doc["scenarios"])


def _junit_cases(path):
    """name -> (kind of outcome or None for a pass, message) per test case of a JUnit file."""
    from xml.etree import ElementTree as ET

    root = ET.parse(path).getroot()
    out = {}
    for case in root.iter("testcase"):
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        name = case.get("classname").rsplit(".", 1)[-1] + "." + case.get("name")
        out[name] = (
            None if outcome is None else outcome.tag,
            None if outcome is None else (outcome.get("message"), outcome.text or ""),
        )
    return out


def test_junit_xml_has_one_case_per_scenario_and_class(probe_runs):
    _, doc, _ = probe_runs["bare"]
    cases = _junit_cases(probe_runs["junit"]["bare"])
    assert set(cases) == (
        {f"scenario.{s}" for s in P.SCENARIOS} | {f"class.{c}" for c in P.CLASSES}
    )
    failed = {
        n.split(".", 1)[1]
        for n, (kind, _) in cases.items()
        if n.startswith("class.") and kind == "failure"
    }
    assert failed == found(doc) and "misrouted_response" in failed
    _, (message, text) = cases["class.misrouted_response"]
    evidence = next(f["evidence"] for f in doc["findings"] if f["class"] == "misrouted_response")
    assert text.splitlines() == evidence
    bad = {s["scenario"] for s in doc["scenarios"] if s["findings"]}
    assert {
        n.split(".", 1)[1]
        for n, (kind, _) in cases.items()
        if n.startswith("scenario.") and kind == "failure"
    } == bad
    assert cases["scenario.reuse"] == (None, None)
    guarded = _junit_cases(probe_runs["junit"]["guarded"])
    assert guarded.pop("scenario.replay_routing")[0] == "skipped"  # not resumable: no ids
    assert all(kind is None for kind, _ in guarded.values())


def test_probe_cannot_test_without_a_server_or_the_tool_or_a_slow_enough_call(sdk_bare):
    dead = f"http://127.0.0.1:{_free_port()}/mcp"
    code, doc, _ = probe_cli(dead)
    assert code == 2 and doc["ok"] is False and "no session" in doc["reason"]
    code, doc, _ = probe_cli(sdk_bare, "--tool", "nope")
    assert code == 2 and "tool missing" in doc["reason"] and "slow" in doc["reason"]
    code, doc, _ = probe_cli(sdk_bare, "--args", '{"label": "x", "steps": 2, "delay": 0.05}')
    assert code == 2 and "too fast to overlap" in doc["reason"]
    code, doc, _ = probe_cli(sdk_bare, "--tool", "echo", "--args", '{"text": "x"}')
    assert code == 2 and "no progress" in doc["reason"]


def test_probe_usage_errors_exit_2():
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "probe", "not-a-url"], capture_output=True, text=True
    )
    assert p.returncode == 2 and "not an http(s) URL" in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "probe", "http://x/mcp", "--args", "[1]"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "JSON object" in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "probe", "--help"], capture_output=True, text=True
    )
    assert p.returncode == 0 and "misrouted_notification" in p.stdout and "exit status" in p.stdout


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--stdio", "--only", "response_routing", "--", "true"], "runs over stdio; these do: "),
        (
            ["http://127.0.0.1:9/mcp", "--revision", "2026-07-28", "--only", "task_isolation"],
            "runs on 2026-07-28; these do: stateless_isolation",
        ),
        (
            ["http://127.0.0.1:9/mcp", "--tasks", "--only", "response_routing"],
            "is a task scenario; these are: task_isolation",
        ),
    ],
)
def test_probe_only_scenarios_another_mode_runs_exit_2_before_contacting_anything(
    argv, says, capsys
):
    """``--only`` naming no scenario of the chosen mode: a usage error that lists the mode's
    scenarios; nothing is started or contacted (the port is closed, the command never runs)."""
    from mcp_inflight.probe.cli import run

    assert run(argv) == 2
    err = capsys.readouterr().err
    assert f"mcp-inflight probe: none of the chosen scenarios {says}" in err, err
