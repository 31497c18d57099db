"""The task scenarios (``probe --tasks``) in the probe's other forms: an ASGI app in-process
(``probe_app_tasks``), a stdio command (``probe_command_tasks``, ``probe --tasks --stdio --
COMMAND``), and the pytest plugin (``mcp_probe(..., tasks=True)``).

One table of scenarios and one judge run in every form; each form only opens sessions its own
way.  In-process, the targets of ``support/task_targets.py`` are given as apps; over stdio, the
same :class:`~support.task_targets.TaskApp` on a process's pipes (``support/task_stdio.py``),
where "another client" is a second process: a per-process table is isolated by construction,
and only a store shared by processes (``TASK_STORE``) can leak."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_inflight.fixtures.tasks import build
from mcp_inflight.impl.http import create_app
from mcp_inflight.probe.inprocess import probe_app_tasks
from mcp_inflight.probe.records import TASK_SCENARIOS
from mcp_inflight.probe.stdio import probe_command_tasks
from mcp_inflight.probe.task_report import STDIO_SCOPE
from support.task_targets import TaskApp

pytest_plugins = ["pytester"]
ARGS = {"label": "probe", "seconds": 1.2}
BIN = Path(sys.executable).parent
TASK_STDIO = [sys.executable, str(Path(__file__).parent / "support" / "task_stdio.py")]
OURS = [str(BIN / "mcp-inflight"), "serve", "--transport", "stdio", "--fixtures", "tasks"]


def by_scenario(report) -> dict[str, list[str]]:
    """scenario -> its classes found"""
    return {
        s["scenario"]: sorted({f["class"] for f in s["findings"]}) for s in report.doc["scenarios"]
    }


# --- in-process ----------------------------------------------------------------------------


def test_our_app_in_process_passes_every_task_scenario():
    r = probe_app_tasks(create_app(build(), "/mcp"), tool="job", args=ARGS)
    assert r.clean and r.exit == 0, r.text()
    assert r.doc["kind"] == "tasks" and r.doc["transport"] == "http"
    assert [s["scenario"] for s in r.doc["scenarios"]] == list(TASK_SCENARIOS)
    assert all(s["scope"] is None for s in r.doc["scenarios"])
    # B's reads went through the app and were refused as unknown tasks
    b = [e for e in r.records["task_isolation"] if e["who"] == "B"]
    assert b and all(e["response"]["error"]["code"] == -32602 for e in b if e["request"]["params"])


@pytest.mark.parametrize(
    ("defect", "scenario", "classes"),
    [
        (
            "shared",
            "task_isolation",
            [
                "task_cancel_across_sessions",
                "task_listed_across_sessions",
                "task_read_across_sessions",
                "task_result_across_sessions",
            ],
        ),
        ("cancel_any", "task_isolation", ["task_cancel_across_sessions"]),
        (
            "seq_shared",
            "task_guessing",
            ["task_cancel_across_sessions", "task_read_across_sessions"],
        ),
        ("rid", "task_ids", ["task_id_guessable"]),
        ("overwrite", "task_terminal", ["task_terminal_changed"]),
    ],
)
def test_each_broken_app_fails_its_scenario_in_process(defect, scenario, classes):
    r = probe_app_tasks(TaskApp(defect), args=ARGS, scenarios=[scenario])
    assert r.status == "defects" and r.exit == 1
    assert by_scenario(r) == {scenario: classes}, r.text()


def test_an_app_without_tasks_is_not_applicable_in_process():
    r = probe_app_tasks(TaskApp("no_tasks"), args=ARGS)
    assert r.status == "untested" and not r.clean and r.doc["scenarios"] == []
    assert set(r.doc["not_applicable"]) == set(TASK_SCENARIOS)


def test_in_process_task_options_are_checked():
    with pytest.raises(ValueError, match="unknown scenario"):
        probe_app_tasks(TaskApp("ok"), scenarios=["duplicate_progress"])


# --- stdio -----------------------------------------------------------------------------------


def test_our_stdio_server_passes_every_task_scenario_from_the_command_line(tmp_path):
    out = subprocess.run(
        [str(BIN / "mcp-inflight"), "probe", "--tasks", "--stdio", "--json", "--quiet"]
        + ["--task-tool", "job", "--task-args", json.dumps(ARGS)]
        + ["--records", str(tmp_path / "rec.json"), "--", *OURS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["status"] == "clean", out.stdout
    assert doc["transport"] == "stdio" and "second process" in doc["other_client"]
    assert {s["scenario"]: s["scope"] for s in doc["scenarios"]} == STDIO_SCOPE
    # the records: every exchange, B's in processes of their own, answered as unknown tasks
    rec = json.loads((tmp_path / "rec.json").read_text())
    assert rec["calibration"]["tool"] == "job" and rec["calibration"]["duration"] >= 1.0
    assert set(rec["records"]) == {"discovery", *TASK_SCENARIOS}
    b = [e for e in rec["records"]["task_isolation"] if e["who"] == "B"]
    assert {e["request"]["method"] for e in b} == {
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/result",
    }
    assert all(e["response"]["error"]["code"] == -32602 for e in b if e["request"]["params"])


@pytest.mark.parametrize(
    ("defect", "store", "scenario", "classes"),
    [
        (
            "shared",
            True,
            "task_isolation",
            [
                "task_cancel_across_sessions",
                "task_listed_across_sessions",
                "task_read_across_sessions",
                "task_result_across_sessions",
            ],
        ),
        ("cancel_any", True, "task_isolation", ["task_cancel_across_sessions"]),
        ("shared", False, "task_isolation", []),  # a table per process: nothing to leak
        ("ok", True, "task_isolation", []),  # a shared store, bound to the process: sound
        (
            "seq_shared",
            True,
            "task_guessing",
            ["task_cancel_across_sessions", "task_read_across_sessions"],
        ),
        ("seq", False, "task_ids", ["task_id_guessable"]),
        ("overwrite", False, "task_terminal", ["task_terminal_changed"]),
    ],
)
def test_stdio_targets_are_judged_across_processes(defect, store, scenario, classes, tmp_path):
    env = {"TASK_STORE": str(tmp_path / "store")} if store else {}
    r = probe_command_tasks([*TASK_STDIO, defect], args=ARGS, env=env, scenarios=[scenario])
    assert r.doc["transport"] == "stdio"
    assert by_scenario(r) == {scenario: classes}, r.text()
    assert r.status == ("defects" if classes else "clean"), r.text()
    if store and classes:  # the leak went through the store: processes 1 and 2 both wrote there
        assert len(list((tmp_path / "store").glob("*.task"))) >= 2


def test_a_stdio_server_without_tasks_is_not_applicable():
    r = probe_command_tasks([*TASK_STDIO, "no_tasks"], args=ARGS)
    assert r.status == "untested" and r.exit == 2 and r.doc["transport"] == "stdio"
    assert all("no tasks capability" in why for why in r.doc["not_applicable"].values())


def test_a_stdio_command_that_is_no_server_is_untested():
    r = probe_command_tasks([sys.executable, "-c", "print('hello')"])
    assert r.status == "untested" and "initialize" in (r.reason or "")
    with pytest.raises(ValueError, match="not a task scenario"):
        probe_command_tasks(OURS, scenarios=["reuse"])


# --- the pytest plugin -----------------------------------------------------------------------


def test_the_fixture_runs_the_task_scenarios_in_both_forms(pytester):
    support = Path(__file__).parent
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(support)!r})\n")
    pytester.makepyfile(
        test_tasks=f"""
import pytest
from mcp_inflight.fixtures.tasks import build
from mcp_inflight.impl.http import create_app
from support.task_targets import TaskApp

ARGS = {ARGS!r}


def test_ours_in_process(mcp_probe):
    report = mcp_probe(create_app(build(), "/mcp"), tasks=True, tool="job", args=ARGS)
    assert report.clean, report.text()


@pytest.mark.mcp_probe("task_terminal", tasks=True)
def test_overwrite_over_stdio(mcp_probe):
    report = mcp_probe(stdio={[*TASK_STDIO, "overwrite"]!r}, args=ARGS)
    assert [s["scenario"] for s in report.doc["scenarios"]] == ["task_terminal"]
    assert report.found == ["task_terminal_changed"]


def test_rid_in_process_fails_and_shows_the_report(mcp_probe):
    assert mcp_probe(TaskApp("rid"), tasks=True, args=ARGS, scenarios=["task_ids"])
"""
    )
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    res.assert_outcomes(passed=2, failed=1)
    res.stdout.fnmatch_lines(["*mcp-inflight probe*", "*task_id_guessable*FOUND*"])
