"""The pytest plugin (entry point ``pytest11``): the ``mcp_probe`` fixture.

::

    def test_no_id_collisions(mcp_probe):
        report = mcp_probe(app, tool="slow", args={"label": "x", "steps": 6, "delay": 0.25})
        assert report.clean

``mcp_probe(app, **options)`` runs :func:`mcp_inflight.probe.probe_app` on the ASGI ``app``
in-process and returns its :class:`~mcp_inflight.probe.report.Report` (true when clean).  When
the test fails, the text of every report that was not clean (each defect class with its
evidence lines, or why it could not test) is printed with the failure, in a section
``mcp-inflight probe``; the assertion line itself names the classes.

The task scenarios (``mcp-inflight probe --tasks``): ``mcp_probe(app, tasks=True, tool="job",
args={...})``, or ``mcp_probe(stdio=[command, ...], tasks=True, ...)`` where client B is a second
process of the command.

Picking scenarios: ``@pytest.mark.mcp_probe("duplicate_progress", "cancel_routing")`` on a test
(or a module's ``pytestmark``), ``scenarios=[...]`` in the call, or ``--mcp-probe-scenario NAME``
(repeatable) on the command line, in that order of precedence.  The marker's keyword arguments
are defaults for the call (``@pytest.mark.mcp_probe(tool="work", args={...})``).

Loaded in every pytest run of an environment where mcp-inflight is installed: it imports nothing
of the probe until a test asks for the fixture, adds one option and one marker, and touches no
other test.  ``-p no:mcp_inflight`` turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_REPORTS = pytest.StashKey[list[Any]]()
_STDIO_OPTIONS = ("tool", "args", "env", "scenarios", "progress")
_APP_TASK_OPTIONS = (
    "tool",
    "args",
    "path",
    "base_url",
    "headers",
    "scenarios",
    "lifespan",
    "progress",
)
MARKER = "mcp_probe"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp-inflight", "mcp-inflight probe (the mcp_probe fixture)")
    group.addoption(
        "--mcp-probe-scenario",
        action="append",
        default=None,
        metavar="SCENARIO",
        dest="mcp_probe_scenarios",
        help="run only this scenario in the mcp_probe fixture (repeatable)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*scenarios, **options): the scenarios the mcp_probe fixture runs, and "
        f"default options for it (tool=, args=, elicit_tool=, ...)",
    )


@pytest.fixture
def mcp_probe(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``mcp_probe(app, tool=..., args=..., elicit_tool=..., elicit_args=..., scenarios=...,
    path="/mcp", ...)``: probe the ASGI ``app`` in-process (see
    :func:`mcp_inflight.probe.probe_app`) and return the report.  ``mcp_probe(stdio=[command,
    ...], tool=..., args=..., env=..., scenarios=...)``: probe the stdio server the command
    starts (:func:`mcp_inflight.probe.stdio.probe_command`); the options that only HTTP has
    (the eliciting tool, ``path``, ...) are not used there.  With ``tasks=True`` (in the call or
    the marker), either form runs the 2025-11-25 task scenarios instead
    (:func:`mcp_inflight.probe.inprocess.probe_app_tasks`,
    :func:`mcp_inflight.probe.stdio.probe_command_tasks`); ``tool`` None picks the first tool
    that allows tasks."""
    marker = request.node.get_closest_marker(MARKER)
    defaults: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        defaults["scenarios"] = list(marker.args)
    elif request.config.getoption("mcp_probe_scenarios"):
        defaults["scenarios"] = list(request.config.getoption("mcp_probe_scenarios"))
    reports: list = request.node.stash.setdefault(_REPORTS, [])

    def run(app: Any = None, *, stdio: list[str] | None = None, **options: Any) -> Any:
        if (app is None) == (stdio is None):
            raise TypeError("mcp_probe takes an ASGI app, or stdio=[command, ...]: one of them")
        if {**defaults, **options}.get("tasks"):
            report = _tasks(app, stdio, defaults, options)
            reports.append(report)
            return report
        if stdio is not None:
            from mcp_inflight.probe.stdio import probe_command

            chosen = {**defaults, **options}
            report = probe_command(
                stdio, **{k: v for k, v in chosen.items() if k in _STDIO_OPTIONS}
            )
            reports.append(report)
            return report
        from mcp_inflight.probe.inprocess import probe_app

        report = probe_app(app, **{**defaults, **options})
        reports.append(report)
        return report

    return run


def _tasks(
    app: Any, stdio: list[str] | None, defaults: dict[str, Any], options: dict[str, Any]
) -> Any:
    """``tasks=True``: the task scenarios, on the app in-process or on the stdio command.  Of
    the scenarios picked by the marker or the command line, the task scenarios are kept (the
    others are the id probe's); none left means all."""
    from mcp_inflight.probe.records import TASK_SCENARIOS

    picked = [n for n in defaults.get("scenarios") or () if n in TASK_SCENARIOS]
    chosen = {**defaults, "scenarios": picked or None, **options}
    chosen.pop("tasks")
    if stdio is not None:
        from mcp_inflight.probe.stdio import probe_command_tasks

        return probe_command_tasks(
            stdio, **{k: v for k, v in chosen.items() if k in _STDIO_OPTIONS}
        )
    from mcp_inflight.probe.inprocess import probe_app_tasks

    return probe_app_tasks(app, **{k: v for k, v in chosen.items() if k in _APP_TASK_OPTIONS})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    rep = yield
    if rep.when == "call" and rep.failed:
        reports: list[Any] = item.stash.get(_REPORTS, [])
        for n, report in enumerate(reports, 1):
            if not report.clean:
                title = "mcp-inflight probe" + (f" ({n})" if n > 1 else "")
                rep.sections.append((title, report.text()))
    return rep
