"""``mcp-inflight probe ... --records PATH``: what the probe saw, written for a reader to check
its verdicts.  Real runs (our server on loopback over HTTP, and over stdio), the file read back:
the calibration the verdicts used, both runs of each scenario, every request with its id and
progress token, and what came back for it; the JSON report itself carries no records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_inflight.probe.records import is_response, progress_token, same_id
from support.http_server import start

BIN = Path(sys.executable).parent


def probe(*argv: str) -> tuple[int, dict]:
    out = subprocess.run(
        [str(BIN / "mcp-inflight"), "probe", "--json", "--quiet", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, json.loads(out.stdout)


def test_records_of_an_http_probe(tmp_path):
    path = tmp_path / "records.json"
    s = start()
    try:
        code, doc = probe(s.url, "--only", "duplicate_progress", "--records", str(path))
    finally:
        s.stop()
    assert code == 0 and doc["status"] == "clean", doc
    assert "records" not in doc
    rec = json.loads(path.read_text())
    assert rec["calibration"] == doc["calibration"] and rec["calibration"]["tool"] == "slow"
    runs = rec["records"]["duplicate_progress"]
    assert set(rec["records"]) == {"duplicate_progress"} and set(runs) == {"control", "test"}
    steps = rec["calibration"]["steps"]
    for variant, ids in (("control", (11, 12)), ("test", (11, 11))):
        run = runs[variant]
        assert run["scenario"] == "duplicate_progress" and run["variant"] == variant
        a, b = (next(p for p in run["posts"] if p["name"] == n) for n in "AB")
        assert (a["id"], b["id"]) == ids and a["token"] != b["token"]
        assert a["sent"] < b["sent"]
        # A's stream: its own progress, every step, then its result under its id
        mine = [e for e in a["events"] if progress_token(e["msg"]) == a["token"]]
        assert len(mine) >= steps and len(mine) == len(
            [e for e in a["events"] if progress_token(e["msg"]) is not None]
        )
        assert is_response(a["events"][-1]["msg"]) and same_id(a["events"][-1]["msg"]["id"], 11)
    # the duplicate was refused, as the report says: B's POST got the 409 and its error body
    b = next(p for p in runs["test"]["posts"] if p["name"] == "B")
    assert b["status"] == doc["refusal"]["status"] == 409
    assert b["body"]["error"]["code"] == doc["refusal"]["code"] == -32600
    b_ok = next(p for p in runs["control"]["posts"] if p["name"] == "B")
    assert b_ok["status"] == 200 and b_ok["events"][-1]["msg"]["id"] == 12


def test_records_of_a_stdio_probe(tmp_path):
    path = tmp_path / "records.json"
    ours = [str(BIN / "mcp-inflight"), "serve", "--transport", "stdio"]
    code, doc = probe("--stdio", "--only", "reuse", "--records", str(path), "--", *ours)
    assert code == 0 and doc["status"] == "clean", doc
    rec = json.loads(path.read_text())
    assert rec["calibration"] == doc["calibration"]
    runs = rec["records"]["reuse"]
    for variant, ids in (("control", (71, 72)), ("test", (71, 71))):
        run = runs[variant]
        assert run["transport"] == "stdio" and run["variant"] == variant
        assert [(r["name"], r["id"]) for r in run["requests"]] == list(zip("AB", ids, strict=True))
        answers = [e for e in run["received"] if is_response(e["msg"])]
        # initialize's answer, then one result per request, B's after it was sent
        assert [e["msg"]["id"] for e in answers] == [0, *ids]
        assert answers[-1]["t"] > run["requests"][1]["sent"]
        assert run["exit"] == 0
