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


@pytest.mark.slow
def test_the_table_command_over_every_installed_target(tmp_path):
    out = tmp_path / "table"
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "probe_table.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((out / "table.json").read_text())
    res = doc["results"]

    def found(col):
        return {f["class"] for f in res[col]["findings"] if f["found"]}

    for col in ("ours 2025-11-25", "ours 2026-07-28", "ours stdio"):
        assert res[col]["status"] == "clean", (col, res[col].get("reason"), found(col))
    for col in ("python-sdk+guard 2025-11-25", "python-sdk+guard 2026-07-28"):
        assert res[col]["status"] == "clean", (col, found(col))
    assert res["python-sdk+guard stdio"]["status"] == "clean", found("python-sdk+guard stdio")
    assert {"misrouted_notification", "misrouted_response", "cancel_misdirected"} <= found(
        "python-sdk 2025-11-25"
    )
    assert {"cancel_misdirected", "id_type_confusion"} <= found("python-sdk stdio")
    if "ts-sdk 2025-11-25" in res:  # installed from npm
        assert {"misrouted_notification", "misrouted_response"} <= found("ts-sdk 2025-11-25")
        assert res["ts-sdk-stateless 2026-07-28"]["status"] == "untested"
        assert "2026-07-28" in res["ts-sdk-stateless 2026-07-28"]["reason"]
        assert res["ts-sdk-stateless 2025-11-25 stateless"]["status"] in ("clean", "defects")
    if "fastmcp 2025-11-25" in res:  # only when the fastmcp package is installed
        assert {"misrouted_notification", "misrouted_response"} <= found("fastmcp 2025-11-25")
        assert "cancel_misdirected" in found("fastmcp stdio")
        assert res["fastmcp+guard 2025-11-25"]["status"] == "clean", found(
            "fastmcp+guard 2025-11-25"
        )
    md = (out / "table.md").read_text()
    assert md.startswith(f"Probed {doc['date']}") and "| `misrouted_notification` |" in md
    for f in doc["findings"]:
        assert f["wire"], f
        if f["class"] in ("misrouted_notification", "cancel_misdirected"):
            assert f["model"] and f["model"]["trace"], f
        assert f["repro"] and (out / f["repro"]).exists(), f
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
