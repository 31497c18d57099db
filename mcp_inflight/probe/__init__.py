"""``mcp-inflight probe URL`` and :func:`probe_app`: a black-box check of a Streamable HTTP MCP
server for in-flight request id collisions.

The probe speaks raw HTTP and SSE (httpx) so that it controls every request id, including the
ones an ordinary client would never send: a second request under an id that is still in flight,
``7`` next to ``"7"``.  It opens 2025-era stateful sessions (``initialize`` with protocol version
2025-11-25, ``Mcp-Session-Id``), and only ever talks to the URL it is given (or, with
:func:`probe_app`, to the ASGI app it is given, in-process).

Misrouting is judged by progress tokens (every POST gets its own), request ids and the structure
of results, never by the tool's text.  Where two requests share an id, a response or
server-to-client request is attributed by time: it cannot belong to a request sent less than 3/4
of the tool's measured running time before it arrived.  Every scenario runs a control first, the
same steps with distinct ids: a scenario whose control fails says nothing about ids and is
reported as not judged.

Exit status: 0 clean, 1 defects found, 2 could not test (no session, tool missing, the tool too
fast to overlap, no progress for the client's token, a control that failed) or a usage error.

The package, by job (the I/O kept apart so that the verdicts can be tested without a server):

* :mod:`.records` (pure): the vocabulary (scenarios, defect classes) and the reading of
  recorded runs;
* :mod:`.judging` (pure): :func:`judge`, a scenario's verdict from its recorded runs and the
  calibration of the tools;
* :mod:`.report` (pure): the JSON report, its text and JUnit XML forms, :class:`Report`;
* :mod:`.recording` (I/O): sessions, POSTs, cancels and aborts, every server-to-client request
  answered (elicitation declined), what each POST's stream received with arrival times;
* :mod:`.scenarios` (I/O): the scenarios as one table and one runner, the calibration, the
  whole probe;
* :mod:`.stdio`: the same over a child process's pipes (``--stdio -- COMMAND``): the runs and
  :func:`.stdio.probe_command`; :mod:`.stdio_channel` the process and its lines (and a process
  as a session, for the task scenarios), :mod:`.stdio_judging` the scenarios' table and verdicts;
* :mod:`.stateless`: 2026-07-28 stateless POSTs of two clients under one id (``--revision
  2026-07-28``), the close judged through the fixture contract (:mod:`mcp_inflight.fixtures.
  contract`);
* :mod:`.task_scenarios`: 2025-11-25 tasks (``--tasks``): another session's reads, lists,
  cancels and results by leaked or guessed task ids, guessable ids, terminal statuses that change;
  one table for every form (a URL, an ASGI app: :func:`probe_app_tasks`, a stdio command, where
  the other client is a second process: :func:`.stdio.probe_command_tasks`); :mod:`.task_report`
  their rules, what stdio lets them judge, the report;
* :mod:`.repro`: a standalone reproduction script for a finding (``bench/probe_table.py``);
* :mod:`.cli`: ``mcp-inflight probe URL``;
* :mod:`.inprocess` and :mod:`.asgi`: :func:`probe_app`, the same probe of an ASGI app with no
  socket;
* :mod:`.plugin`: the pytest plugin (the ``mcp_probe`` fixture).

The names below are imported on first use (PEP 562), so that importing the package, as the
pytest plugin does in every test run, costs next to nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> submodule that defines it
_EXPORTS = {
    "cli": ("build_parser", "main", "run"),
    "inprocess": ("LoopWatch", "probe_app", "probe_app_async", "probe_app_tasks"),
    "judging": ("JUDGES", "Verdict", "judge"),
    "recording": ("Post", "Session", "Target", "read_sse"),
    "records": (
        "ATTRIBUTE",
        "CLASS_HELP",
        "CLASSES",
        "DEFAULT_ARGS",
        "DEFAULT_ELICIT_ARGS",
        "DEFAULT_ELICIT_TOOL",
        "DEFAULT_TOOL",
        "SCENARIOS",
        "TIME_ATTRIBUTED",
        "CannotTest",
        "attribute",
        "describe_refusal",
        "progress_token",
        "refusal_of",
        "same_id",
    ),
    "report": ("Report", "junit_xml", "render", "render_text", "summarize", "untested", "verdicts"),
    "scenarios": ("TABLE", "Pace", "Scenario", "calibrate", "probe", "record_run"),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = [
    "ATTRIBUTE",
    "CLASSES",
    "CLASS_HELP",
    "CannotTest",
    "DEFAULT_ARGS",
    "DEFAULT_ELICIT_ARGS",
    "DEFAULT_ELICIT_TOOL",
    "DEFAULT_TOOL",
    "JUDGES",
    "LoopWatch",
    "Pace",
    "Post",
    "Report",
    "SCENARIOS",
    "Scenario",
    "Session",
    "TABLE",
    "TIME_ATTRIBUTED",
    "Target",
    "Verdict",
    "attribute",
    "build_parser",
    "calibrate",
    "describe_refusal",
    "judge",
    "junit_xml",
    "main",
    "probe",
    "probe_app",
    "probe_app_async",
    "probe_app_tasks",
    "progress_token",
    "read_sse",
    "record_run",
    "refusal_of",
    "render",
    "render_text",
    "run",
    "same_id",
    "summarize",
    "untested",
    "verdicts",
]
assert sorted(__all__) == sorted(_WHERE)

if TYPE_CHECKING:
    from .cli import build_parser, main, run
    from .inprocess import LoopWatch, probe_app, probe_app_async, probe_app_tasks
    from .judging import JUDGES, Verdict, judge
    from .recording import Post, Session, Target, read_sse
    from .records import (
        ATTRIBUTE,
        CLASS_HELP,
        CLASSES,
        DEFAULT_ARGS,
        DEFAULT_ELICIT_ARGS,
        DEFAULT_ELICIT_TOOL,
        DEFAULT_TOOL,
        SCENARIOS,
        TIME_ATTRIBUTED,
        CannotTest,
        attribute,
        describe_refusal,
        progress_token,
        refusal_of,
        same_id,
    )
    from .report import Report, junit_xml, render, render_text, summarize, untested, verdicts
    from .scenarios import TABLE, Pace, Scenario, calibrate, probe, record_run


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
