"""``bench/probe_table.py``, the cross-SDK table: its wire excerpts and reproduction scripts on
their own, then (slow) the whole command against every target that installs here, with one of
its reproduction scripts run against the real server it was written for."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

from mcp_inflight.probe.records import CLASSES, STDIO_SCENARIOS
from mcp_inflight.probe.repro import PLAN, script

ROOT = pathlib.Path(__file__).resolve().parent.parent
SDK_SERVER = ROOT / "tests" / "support" / "sdk_server.py"


def _table():
    spec = importlib.util.spec_from_file_location("probe_table", ROOT / "bench" / "probe_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_scenario_has_a_script_that_compiles():
    for scenario in PLAN:
        for kw in (
            {"url": "http://127.0.0.1:9/mcp"},
            {"url": "http://127.0.0.1:9/mcp", "mode": "stateless", "revision": "2026-07-28"},
            {"argv": ["server", "--stdio"]},
        ):
            text = script(scenario, "title", tool="slow", args={"steps": 4}, **kw)
            compile(text, f"repro-{scenario}.py", "exec")


def test_the_excerpt_keeps_time_order_and_leaves_logs_out():
    run = {
        "posts": [
            {
                "name": "A",
                "method": "tools/call",
                "id": 1,
                "sender": "client",
                "status": 200,
                "sent": 0.0,
                "how": "closed",
                "end": 2.0,
                "events": [
                    {"t": 1.0, "msg": {"method": "notifications/message", "params": {}}},
                    {"t": 1.5, "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}},
                ],
            },
            {
                "name": "B",
                "method": "tools/call",
                "id": 1,
                "sender": "rogue",
                "status": 200,
                "sent": 0.5,
                "how": "aborted",
                "end": 0.7,
                "events": [],
            },
        ],
        "cancels": [],
    }
    lines = _table().excerpt(run)
    assert [x.split("s  ", 1)[1].split(":")[0] for x in lines] == ["A", "B", "B", "A's stream"]
    assert not any("notifications/message" in x for x in lines)


def test_the_model_gives_a_counterexample_for_each_misrouting_class():
    t = _table()
    for cls in t.MODEL:
        cx = t.counterexample(
            cls, "2026-07-28" if cls == "refused_across_clients" else "2025-11-25"
        )
        assert cx is not None and cx["steps"] >= 2 and cx["trace"], cls


def _found(res, col):
    return {f["class"] for f in res[col]["findings"] if f["found"]}


def _clean(res, *cols):
    for col in cols:
        assert res[col]["status"] == "clean", (col, res[col].get("reason"), _found(res, col))


def _ours(res, out, doc):
    _clean(res, "ours 2025-11-25", "ours 2026-07-28", "ours stdio")


def _sdk(res, out, doc):
    assert {"misrouted_notification", "misrouted_response", "cancel_misdirected"} <= _found(
        res, "python-sdk 2025-11-25"
    )
    # over stdio (the probe's own stdio tests leave the whole run of this server to this one)
    stdio = res["python-sdk stdio"]
    found = _found(res, "python-sdk stdio")
    assert stdio["exit_status"] == 1, stdio
    assert {"cancel_misdirected", "id_type_confusion"} <= found, found
    status = {s["scenario"]: bool(s["findings"]) for s in stdio["scenarios"]}
    assert status["cancel_routing"] and status["id_types_cancel"], status
    assert stdio["refusal"] is None  # it admits every duplicate
    assert set(stdio["not_applicable"]) and found <= set(CLASSES)
    # a reproduction script, run as a maintainer would, shows the defect on the real server
    stdio = next(
        f
        for f in doc["findings"]
        if f["target"] == "python-sdk"
        and f["class"] == "cancel_misdirected"
        and f["profile"] == "stdio"
    )
    run = subprocess.run(
        [sys.executable, str(out / stdio["repro"])], capture_output=True, text=True, timeout=60
    )
    assert "A reported 6 of 6 steps, B 1" in run.stdout, run.stdout[-2000:]


def _sdk_guarded(res, out, doc):
    _clean(res, *(f"python-sdk+guard {p}" for p in ("2025-11-25", "2026-07-28", "stdio")))
    # behind guard_stdio the duplicate is refused, and every stdio scenario is judged
    stdio = res["python-sdk+guard stdio"]
    assert stdio["exit_status"] == 0, stdio
    assert stdio["refusal"]["code"] == -32600, stdio["refusal"]
    assert [s["scenario"] for s in stdio["scenarios"]] == list(STDIO_SCENARIOS)


def _ts(res, out, doc):
    assert {"misrouted_notification", "misrouted_response"} <= _found(res, "ts-sdk 2025-11-25")


def _ts_stateless(res, out, doc):
    assert res["ts-sdk-stateless 2026-07-28"]["status"] == "untested"
    assert "2026-07-28" in res["ts-sdk-stateless 2026-07-28"]["reason"]
    assert res["ts-sdk-stateless 2025-11-25 stateless"]["status"] in ("clean", "defects")


def _fastmcp(res, out, doc):
    assert {"misrouted_notification", "misrouted_response"} <= _found(res, "fastmcp 2025-11-25")
    assert "cancel_misdirected" in _found(res, "fastmcp stdio")


def _fastmcp_guarded(res, out, doc):
    _clean(res, "fastmcp+guard 2025-11-25", "fastmcp+guard 2026-07-28")


# What each target's columns must show.  One run of the command per target (``--only``), so the
# targets' probes (mostly waiting on servers) run side by side under the test workers.
EXPECTED = {
    "ours": _ours,
    "python-sdk": _sdk,
    "python-sdk+guard": _sdk_guarded,
    "ts-sdk": _ts,
    "ts-sdk-stateless": _ts_stateless,
    "fastmcp": _fastmcp,
    "fastmcp+guard": _fastmcp_guarded,
}


def test_every_target_of_the_table_has_its_expectations():
    names = {t["name"] for t in _table().targets(only=())}
    assert names == set(EXPECTED), names ^ set(EXPECTED)


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_the_table_command_on_each_installed_target(target, tmp_path):
    out = tmp_path / "table"
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "probe_table.py"), "--out", str(out)]
        + ["--only", target],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((out / "table.json").read_text())
    res = doc["results"]
    assert set(res) and all(col.split(" ")[0] == target for col in res), sorted(res)
    if "unavailable" in res.get(target, {}):
        pytest.skip(f"{target}: {res[target]['unavailable']}")
    EXPECTED[target](res, out, doc)
    md = (out / "table.md").read_text()
    assert md.startswith(f"Probed {doc['date']}")
    for f in doc["findings"]:
        assert f"| `{f['class']}` |" in md, f["class"]
        assert f["wire"], f
        if f["class"] in ("misrouted_notification", "cancel_misdirected"):
            assert f["model"] and f["model"]["trace"], f
        assert f["repro"] and (out / f["repro"]).exists(), f
