"""The tasks extension's conformance scenarios in ``tests/conformance/run.py``: they run by name
beside the required ones for ``mcp-inflight`` at 2026-07-28 (the slow
``tests/test_conformance.py::test_conformance_suite[mcp-inflight]`` runs them), are judged like
required ones, and do not enter the agreement with the suite's exit code (the required run's)."""

from __future__ import annotations

import subprocess

import pytest

from support.conformance_run import load_run

run = load_run("conformance_run_tasks")
TASKS = run.extensions("mcp-inflight", "2026-07-28")


def _judge(tmp_path, monkeypatch, scenarios: dict[str, bool], expected: str, suite_exit: int):
    exp = tmp_path / "expected"
    exp.mkdir(exist_ok=True)
    (exp / "mcp-inflight-2026-07-28.txt").write_text(expected)
    monkeypatch.setattr(run, "EXPECTED", exp)
    data = {
        "server": "mcp-inflight",
        "revision": "2026-07-28",
        "suite_exit": suite_exit,
        "scenarios": {k: {"passed": v, "messages": []} for k, v in scenarios.items()},
    }
    return run.judge(data, ["a", *TASKS])


def test_only_our_server_runs_the_tasks_scenarios_and_only_at_2026():
    assert TASKS and all(s.startswith("tasks-") for s in TASKS)
    assert run.extensions("mcp-inflight", "2025-11-25") == ()
    assert run.extensions("sdk", "2026-07-28") == ()


def test_a_failing_tasks_scenario_is_unexpected_unless_listed(tmp_path, monkeypatch):
    scen = {"a": True, **{s: True for s in TASKS}, TASKS[0]: False}
    v = _judge(tmp_path, monkeypatch, scen, "", suite_exit=0)
    assert v["unexpected"] == [TASKS[0]]
    assert v["agrees"], "the suite's exit code is the required run's: the extension is not in it"
    v = _judge(tmp_path, monkeypatch, scen, f"{TASKS[0]}  # known\n", suite_exit=0)
    assert v["unexpected"] == [] and v["stale"] == []


def test_a_listed_tasks_scenario_that_passes_is_stale(tmp_path, monkeypatch):
    scen = {"a": True, **{s: True for s in TASKS}}
    v = _judge(tmp_path, monkeypatch, scen, f"{TASKS[1]}  # known\n", suite_exit=0)
    assert v["stale"] == [TASKS[1]]


def test_a_failing_required_scenario_still_needs_the_suite_to_agree(tmp_path, monkeypatch):
    scen = {"a": False, **{s: True for s in TASKS}}
    assert not _judge(tmp_path, monkeypatch, scen, "a  # known\n", suite_exit=0)["agrees"]


def test_the_pinned_suite_registers_every_tasks_scenario_we_run():
    if not (run.NODE.exists() and run.SUITE.exists()):
        pytest.skip(
            "the pinned conformance suite is not installed (cd tests/conformance && npm ci)"
        )
    r = subprocess.run(
        [str(run.NODE), str(run.SUITE), "list", "--server"],
        capture_output=True,
        text=True,
        cwd=run.HERE,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    listed = {
        line.strip()[2:].split()[0]
        for line in r.stdout.splitlines()
        if line.strip().startswith("- ")
    }
    assert set(TASKS) <= listed
    # the one the suite registers but only skips is left out on purpose
    assert "tasks-status-notifications" in listed and "tasks-status-notifications" not in TASKS
