"""``mcp-inflight probe URL --tasks``: the task scenarios over real HTTP on loopback.

Our runtime (``mcp_inflight/fixtures/tasks.py`` on uvicorn) passes every task scenario; small
servers with one known defect each (``support/task_targets.py``) fail the scenario meant to
catch it, and their sound twin passes; a server without tasks gets every scenario as n/a (exit
2, never clean).  The id rules (neighbours, sequential ids, ids from the request id) are checked
on their own too."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_inflight.fixtures.tasks import build
from mcp_inflight.probe.recording import Target
from mcp_inflight.probe.records import TASK_SCENARIOS
from mcp_inflight.probe.report import junit_xml, render
from mcp_inflight.probe.task_scenarios import (
    TaskTarget,
    from_request_id,
    neighbours,
    probe_tasks,
    sequential,
)
from support.http_server import start
from support.task_targets import Served, TaskApp

ARGS = {"label": "probe", "seconds": 1.2}
BIN = Path(sys.executable).parent


def probe(url: str, *only: str, tool: str | None = None) -> dict:
    t = Target(url=url, tool="", args={}, elicit_tool=None, elicit_args={}, headers={})
    coro = probe_tasks(TaskTarget(t, tool, ARGS), only or TASK_SCENARIOS)
    return asyncio.run(asyncio.wait_for(coro, 60))


def found(report: dict) -> dict[str, list[str]]:
    """scenario -> its classes found"""
    return {s["scenario"]: sorted({f["class"] for f in s["findings"]}) for s in report["scenarios"]}


@pytest.fixture
def target(request: pytest.FixtureRequest):
    served = Served(TaskApp(request.param))
    yield served.url
    served.stop()


def test_our_runtime_passes_every_task_scenario():
    s = start(build())
    try:
        r = probe(s.url, tool="job")
    finally:
        s.stop()
    assert r["status"] == "clean" and r["exit"] == 0, render(r)
    assert [x["scenario"] for x in r["scenarios"]] == list(TASK_SCENARIOS)
    assert all(x["status"] == "judged" for x in r["scenarios"]), render(r)
    # B's attempts are on the wire: refused with our unknown-task error
    b = [e for e in r["records"]["task_isolation"] if e["who"] == "B"]
    assert {e["request"]["method"] for e in b} == {
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/result",
    }
    assert all(
        e["response"]["error"]["code"] == -32602 for e in b if "taskId" in e["request"]["params"]
    )


@pytest.mark.parametrize("target", ["ok"], indirect=True)
def test_the_sound_twin_passes(target):
    r = probe(target)
    assert r["status"] == "clean", render(r)


@pytest.mark.parametrize("target", ["shared"], indirect=True)
def test_a_task_table_shared_by_every_session(target):
    r = probe(target, "task_isolation", "task_guessing", "task_ids")
    assert found(r) == {
        "task_isolation": [
            "task_cancel_across_sessions",
            "task_listed_across_sessions",
            "task_read_across_sessions",
            "task_result_across_sessions",
        ],
        "task_guessing": [],  # random ids: nothing to guess
        "task_ids": [],
    }, render(r)
    ev = next(f for f in r["findings"] if f["class"] == "task_read_across_sessions")["evidence"]
    assert ev and ev[0].startswith("task_isolation: B tasks/get") and '"status"' in ev[0]


@pytest.mark.parametrize("target", ["cancel_any"], indirect=True)
def test_cancel_honoured_for_any_session(target):
    r = probe(target, "task_isolation")
    assert found(r) == {"task_isolation": ["task_cancel_across_sessions"]}, render(r)
    (ev,) = next(f for f in r["findings"] if f["found"])["evidence"]
    assert "B tasks/cancel" in ev and "A tasks/get" in ev and '"cancelled"' in ev


@pytest.mark.parametrize("target", ["seq"], indirect=True)
def test_sequential_ids_are_guessable_even_when_bound(target):
    r = probe(target, "task_ids", "task_guessing", "task_isolation")
    assert found(r) == {
        "task_ids": ["task_id_guessable"],
        "task_guessing": [],
        "task_isolation": [],
    }, render(r)


@pytest.mark.parametrize("target", ["seq_shared"], indirect=True)
def test_a_guessed_neighbour_reaches_another_sessions_task(target):
    r = probe(target, "task_guessing")
    assert found(r) == {
        "task_guessing": ["task_cancel_across_sessions", "task_read_across_sessions"]
    }, render(r)
    ev = next(f for f in r["findings"] if f["class"] == "task_read_across_sessions")["evidence"]
    assert all("guessed id" in e for e in ev)


@pytest.mark.parametrize("target", ["rid"], indirect=True)
def test_ids_made_from_the_request_id(target):
    r = probe(target, "task_ids")
    assert found(r) == {"task_ids": ["task_id_guessable"]}, render(r)
    assert "derives from request id 739501" in render(r)


@pytest.mark.parametrize("target", ["overwrite"], indirect=True)
def test_a_terminal_status_that_is_overwritten(target):
    r = probe(target, "task_terminal")
    assert found(r) == {"task_terminal": ["task_terminal_changed"]}, render(r)
    ev = next(f for f in r["findings"] if f["found"])["evidence"]
    # both halves: a late completion over "cancelled", a cancel over "completed"
    assert any('"status": "completed"' in e.split("later")[1] for e in ev if "later" in e)
    assert any("a cancel of a completed task was accepted" in e for e in ev)


@pytest.mark.parametrize("target", ["no_tasks"], indirect=True)
def test_a_server_without_tasks_is_not_applicable_never_clean(target):
    r = probe(target)
    assert r["status"] == "untested" and r["exit"] == 2 and not r["ok"]
    assert r["scenarios"] == []
    assert set(r["not_applicable"]) == set(TASK_SCENARIOS)
    assert all("no tasks capability" in why for why in r["not_applicable"].values())
    xml = junit_xml(r)
    assert xml.count("<skipped") >= len(TASK_SCENARIOS) and "<failure" not in xml


@pytest.mark.parametrize("target", ["cancel_any"], indirect=True)
def test_the_command_line_reports_json_and_exit_status(target, tmp_path):
    out = subprocess.run(
        [str(BIN / "mcp-inflight"), "probe", target, "--tasks", "--quiet", "--json"]
        + ["--task-args", json.dumps(ARGS), "--only", "task_isolation"]
        + ["--junit-xml", str(tmp_path / "j.xml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["kind"] == "tasks" and doc["status"] == "defects"
    (s,) = doc["scenarios"]
    assert "MCP 2025-11-25, basic/utilities/tasks" in s["rule"]
    assert [f["class"] for f in doc["findings"] if f["found"]] == ["task_cancel_across_sessions"]
    assert 'name="task_isolation"' in (tmp_path / "j.xml").read_text()


def test_id_rules():
    assert neighbours("task-9") == ["task-7", "task-8", "task-10", "task-11"]
    u = "0b8a5c1e-4f7d-4a3b-9c2d-00000000000f"
    assert u[:-1] + "e" in neighbours(u) and u[:-2] + "10" in neighbours(u)
    assert neighbours("v8JmrltMeo6c-_RwKB_RFg") == [
        "v8JmrltMeo6c-_RwKB_RFf",
        "v8JmrltMeo6c-_RwKB_RFh",
    ]
    assert sequential("7", "8") and sequential("task-9", "task-10") and sequential("ab0f", "ab10")
    assert not sequential("7", "7") and not sequential("7", "100")
    assert not sequential(
        "0b8a5c1e-4f7d-4a3b-9c2d-5e6f7a8b9c0d", "0b8a5c1e-1234-4a3b-9c2d-5e6f7a8b9c0d"
    )
    assert from_request_id("42", 42) and from_request_id("task-42-x", 42)
    assert not from_request_id("task-421", 42) and not from_request_id("abc", 42)


TS = Path(__file__).parent / "ts_sdk"


@pytest.mark.skipif(
    shutil.which("node") is None
    or not (TS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(),
    reason="needs node and `npm ci` in tests/ts_sdk",
)
def test_the_typescript_sdk_task_server_passes():
    """The official TypeScript SDK 1.32.2 (``tests/ts_sdk/task_server.mjs``, the SDK example's
    style: one task store for every session) binds tasks to the session, mints random ids and
    keeps terminal statuses: every task scenario passes."""
    proc = subprocess.Popen(
        ["node", str(TS / "task_server.mjs")],
        cwd=TS,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        r = probe(line.split()[-1], tool="job")
    finally:
        proc.kill()
        proc.wait(10)
    assert r["status"] == "clean", render(r)
    ids = [
        e["response"]["result"]["task"]["taskId"]
        for e in r["records"]["task_ids"]
        if e["request"]["method"] == "tools/call"
    ]
    assert len(ids) == 2 and all(len(i) == 32 for i in ids)  # 128 random bits, as hex
