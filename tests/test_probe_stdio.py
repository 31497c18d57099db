"""``mcp-inflight probe --stdio -- COMMAND ...``: the verdicts on recorded channels, the command
line, and the probe through the pytest fixture against real child processes (``mcp-inflight
serve --transport stdio`` and the official ``mcp`` SDK's stdio server).  The whole stdio probe of
the SDK's server, without and with ``guard_stdio``, is judged in ``tests/test_probe_table.py``
(its ``python-sdk stdio`` and ``python-sdk+guard stdio`` columns): one run of each, not two."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from mcp_inflight.probe.stdio import judge_stdio

pytest_plugins = ["pytester"]
HERE = pathlib.Path(__file__).parent
SDK_SERVER = HERE / "support" / "sdk_server.py"
BIN = pathlib.Path(sys.executable).parent
CAL = {"tool": "slow", "args": {}, "steps": 4, "duration": 2.0}
SDK = [sys.executable, str(SDK_SERVER), "--stdio"]
OURS = [str(BIN / "mcp-inflight"), "serve", "--transport", "stdio"]


def prog(token, n):
    return {"method": "notifications/progress", "params": {"progressToken": token, "progress": n}}


def result(rid):
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [], "isError": False}}


def run(ids, events, cancel_at=None, variant="test", scenario="cancel_routing"):
    """A recorded channel: A sent at 0 s, B at 0.6 s; ``events`` as ``(t, msg)``."""
    toks = (f"{scenario}:{variant}:A", f"{scenario}:{variant}:B")
    reqs = [
        {"name": n, "sender": "client", "method": "tools/call", "id": i, "token": tok, "sent": t}
        for n, i, tok, t in zip("AB", ids, toks, (0.0, 0.6), strict=True)
    ]
    return {
        "requests": reqs,
        "received": [{"t": t, "msg": m(toks) if callable(m) else m} for t, m in events],
        "cancels": [] if cancel_at is None else [{"t": cancel_at, "id": ids[0], "means": "A"}],
        "unparsable": [],
    }


def steps(who, n, start, every=0.5):
    k = 0 if who == "A" else 1
    return [(start + every * i, lambda toks, i=i: prog(toks[k], i + 1)) for i in range(n)]


def control_cancel(scenario="cancel_routing", ids=(31, 32)):
    return run(
        ids,
        steps("A", 1, 0.5) + steps("B", 4, 0.8) + [(2.9, result(ids[1]))],
        cancel_at=0.9,
        variant="control",
        scenario=scenario,
    )


def test_a_cancel_that_stops_the_duplicate_is_misdirected():
    test = run(
        (31, 31),
        steps("A", 4, 0.5) + steps("B", 1, 0.8) + [(2.5, result(31))],
        cancel_at=0.9,
    )
    v = judge_stdio("cancel_routing", control_cancel(), test, CAL)
    assert v.status == "judged"
    classes = [c for c, _ in v.findings]
    assert classes == ["cancel_misdirected", "cancel_misdirected"], v.findings
    assert "ran all 4 steps" in v.findings[0][1] and "stopped at 1 of 4" in v.findings[1][1]


def test_a_refused_duplicate_and_a_cancel_that_stops_its_own_request_are_clean():
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "in flight"}}
    test = run((31, 31), steps("A", 1, 0.5) + [(0.61, refusal)], cancel_at=0.7)
    v = judge_stdio("cancel_routing", control_cancel(), test, CAL)
    assert v.status == "judged" and v.findings == [] and v.refusal["code"] == -32600


def test_a_server_that_ignores_cancels_is_not_judged():
    ignored = run(
        (31, 32),
        steps("A", 4, 0.5) + steps("B", 4, 0.8) + [(2.5, result(31)), (2.9, result(32))],
        cancel_at=0.9,
        variant="control",
    )
    v = judge_stdio("cancel_routing", ignored, ignored, CAL)
    assert v.status == "not_judged" and "does not stop a cancelled request" in v.note


def test_7_and_the_string_7_answered_under_one_id_is_type_confusion():
    def both(ids, variant, answers):
        return run(
            ids,
            steps("A", 4, 0.5) + steps("B", 4, 0.8) + answers,
            variant=variant,
            scenario="id_types",
        )

    control = both((8, "9"), "control", [(2.5, result(8)), (2.9, result("9"))])
    test = both((7, "7"), "test", [(2.5, result(7)), (2.9, result(7))])
    v = judge_stdio("id_types", control, test, CAL)
    classes = {c for c, _ in v.findings}
    assert classes == {"id_type_confusion"}, v.findings
    assert any('B (id "7") got no result' in e for _, e in v.findings)


def test_two_admitted_duplicates_need_two_results():
    def dup(ids, variant, answers):
        return run(
            ids,
            steps("A", 4, 0.5) + steps("B", 4, 1.6) + answers,
            variant=variant,
            scenario="duplicate_progress",
        )

    control = dup((11, 12), "control", [(2.5, result(11)), (3.6, result(12))])
    assert judge_stdio("duplicate_progress", control, control, CAL).findings == []
    test = dup((11, 11), "test", [(2.5, result(11))])
    v = judge_stdio("duplicate_progress", control, test, CAL)
    assert [c for c, _ in v.findings] == ["lost_response"], v.findings


def _cli(*argv, timeout=120):
    return subprocess.run(
        [str(BIN / "mcp-inflight"), "probe", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_usage_errors_exit_2():
    assert _cli("--stdio").returncode == 2
    assert _cli("--stdio", "http://127.0.0.1:9/mcp", "--", "x").returncode == 2
    r = _cli()
    assert r.returncode == 2 and "--stdio -- COMMAND" in r.stderr


def test_a_command_that_is_no_mcp_server_is_untested_not_clean():
    r = _cli("--stdio", "--json", "--quiet", "--", sys.executable, "-c", "print('hello')")
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["status"] == "untested" and not doc["ok"]
    assert "initialize" in doc["reason"]


@pytest.mark.slow
def test_our_stdio_server_is_clean_through_the_fixture_form(pytester):
    pytester.makepyfile(
        test_ours=f"""
def test_ours(mcp_probe):
    report = mcp_probe(stdio={OURS!r}, scenarios=["cancel_routing", "id_types_cancel"])
    assert report.clean, report.text()
    assert report.doc["transport"] == "stdio"


def test_bare_sdk(mcp_probe):
    report = mcp_probe(stdio={SDK!r}, scenarios=["cancel_routing"])
    assert report.found == ["cancel_misdirected"]
"""
    )
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "")
    res.assert_outcomes(passed=2)
