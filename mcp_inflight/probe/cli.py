"""The command line: ``mcp-inflight probe URL [options]`` (:func:`run`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from . import records
from .recording import Target
from .report import junit_xml, render, untested


class _Parser(argparse.ArgumentParser):
    def error(self, message: Any) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _json_object(text: Any) -> Any:
    try:
        v = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return v


def _header(text: Any) -> Any:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def _url(text: Any) -> Any:
    if not (text.startswith("http://") or text.startswith("https://")):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text


_PROGRESS_TOOL = (
    "a tool that reports progress for the client's progress token and runs at least a second"
)
_SKIP = "; '' to skip that scenario"


def build_parser() -> Any:
    classes = "\n".join(f"  {c:<26} {records.CLASS_HELP[c]}" for c in records.CLASSES)
    scenarios = records.SCENARIOS
    p = _Parser(
        prog="mcp-inflight probe",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Probe a Streamable HTTP MCP server (2025-era protocol, stateful session) for what\n"
            "it does when a request arrives under a JSON-RPC id that is still in flight.\n\n"
            "Each scenario runs first with distinct ids (the control), then with colliding ids:\n"
            "  " + ", ".join(scenarios[:4]) + ",\n  " + ", ".join(scenarios[4:7]) + ".\n"
            "Two more look at one call's stream: " + ", ".join(scenarios[7:]) + ".\n"
            "Misrouting is judged by progress tokens, request ids and result shapes, never by\n"
            "the tool's text. Every POST gets its own progress token. Only URL is contacted;\n"
            "a whole probe takes about 10-20 s against a healthy server.\n\n"
            "--revision 2026-07-28: stateless POSTs, two clients under one id: "
            + ", ".join(records.STATELESS_SCENARIOS)
            + ".\n--stdio -- COMMAND ...: a stdio server, started once per run: "
            + ", ".join(records.STDIO_SCENARIOS)
            + ".\n--tasks (with a URL, or --stdio): "
            + ", ".join(records.TASK_SCENARIOS)
            + "; over stdio the other\nclient is a second process of the command."
        ),
        epilog=(
            "defect classes:\n" + classes + "\n\nexit status: 0 clean, 1 defects found, 2 could "
            "not test (no session, tool missing,\ntoo fast to overlap, a control failed) or usage "
            "error. The defaults fit `mcp-inflight serve`."
        ),
    )
    p.add_argument(
        "url",
        type=_url,
        nargs="?",
        metavar="URL",
        help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp",
    )
    p.add_argument(
        "--revision",
        choices=(records.PROTOCOL_VERSION, records.MODERN),
        default=records.PROTOCOL_VERSION,
        help=f"{records.PROTOCOL_VERSION}: sessions (default); {records.MODERN}: stateless POSTs, "
        f"two clients under one id ({', '.join(records.STATELESS_SCENARIOS)}; closing a POST "
        f"judged by the fixture contract's {records.OUTCOME_TOOL} tool)",
    )
    p.add_argument(
        "--stateless",
        action="store_true",
        help=f"with --revision {records.PROTOCOL_VERSION}: a server that runs without sessions "
        f"(the stateless scenarios under that header; a closed stream is not judged as a cancel)",
    )
    p.add_argument(
        "--stdio",
        action="store_true",
        help="probe a stdio server instead: the command after `--` is started once per run "
        "and spoken to on its stdin and stdout (mcp-inflight probe --stdio -- COMMAND ...)",
    )
    p.add_argument(
        "--tasks",
        action="store_true",
        help="probe 2025-11-25 tasks instead: another session (with --stdio: another process "
        "of the command) reads, lists, cancels or takes the result of a task by a leaked or "
        "guessed id; ids guessable; a terminal status that changes ("
        + ", ".join(records.TASK_SCENARIOS)
        + ")",
    )
    p.add_argument(
        "--task-tool",
        metavar="NAME",
        help="with --tasks: the tool to run as a task (default: the first whose "
        "execution.taskSupport allows it)",
    )
    p.add_argument(
        "--task-args",
        type=_json_object,
        metavar="JSON",
        help='with --tasks: its arguments, to run at least a second (default: {"label": '
        '"probe", "seconds": 2.0})',
    )
    for prefix, tool, tool_args, what, skip in (
        ("", records.DEFAULT_TOOL, records.DEFAULT_ARGS, _PROGRESS_TOOL, ""),
        (
            "elicit-",
            records.DEFAULT_ELICIT_TOOL,
            records.DEFAULT_ELICIT_ARGS,
            "a tool that sends elicitation/create after a delay",
            _SKIP,
        ),
        (
            "twice-",
            records.DEFAULT_TWICE_TOOL,
            records.DEFAULT_TWICE_ARGS,
            "a tool that elicits twice in one call",
            _SKIP,
        ),
    ):
        p.add_argument(
            f"--{prefix}tool",
            default=tool,
            metavar="NAME",
            help=f"{what} (default: {tool}{skip})",
        )
        p.add_argument(
            f"--{prefix}args",
            type=_json_object,
            default=tool_args,
            metavar="JSON",
            help=f"its arguments (default: {json.dumps(tool_args)})",
        )
    p.add_argument(
        "--header",
        type=_header,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra HTTP header on every request (e.g. Authorization); repeatable",
    )
    p.add_argument(
        "--only",
        action="append",
        choices=records.SCENARIOS
        + ("id_types_cancel",)
        + records.STATELESS_SCENARIOS
        + records.TASK_SCENARIOS,
        metavar="SCENARIO",
        help="run only this scenario (repeatable): "
        + ", ".join(records.SCENARIOS)
        + "; over stdio: "
        + ", ".join(records.STDIO_SCENARIOS),
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"ok", "target", "findings": [{"class", "found", '
        '"evidence"}], "refusal", ...}',
    )
    p.add_argument("--records", metavar="PATH", help="write every recorded stream (JSON) to PATH")
    p.add_argument(
        "--junit-xml",
        metavar="PATH",
        help="also write the verdicts as JUnit XML to PATH: one test case per scenario "
        "and per defect class",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def run(argv: list[str]) -> int:
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.stdio or command:
        if not args.stdio or not command or args.url:
            parser.error("--stdio takes a command after `--` and no URL")
        if args.tasks:
            from .stdio_channel import StdioTarget

            st = StdioTarget(argv=command, tool=args.task_tool or "", args={})
            return _run_tasks(args, st, _say(args))
        return _run_stdio(args, command)
    if args.url is None:
        parser.error("give a URL, or --stdio -- COMMAND ...")
    try:
        import httpx  # noqa: F401
    except ImportError:
        sys.stderr.write("mcp-inflight probe: needs the httpx package (pip install httpx)\n")
        return 2
    t = Target(
        url=args.url,
        tool=args.tool,
        args=args.args,
        elicit_tool=args.elicit_tool or None,
        elicit_args=args.elicit_args,
        headers=dict(args.header),
        twice_tool=args.twice_tool or None,
        twice_args=args.twice_args,
    )

    say = _say(args)
    from .scenarios import probe

    if args.tasks:
        return _run_tasks(args, t, say)
    if args.revision == records.MODERN or args.stateless:
        return _run_stateless(args, t, say)
    only = tuple(n for n in (args.only or records.SCENARIOS) if n in records.SCENARIOS)
    return _outcome(
        args,
        probe(t, only or records.SCENARIOS, say),
        lambda why: untested(args.url, why),
    )


def _run_stdio(args: Any, command: list[str]) -> int:
    from .records import STDIO_SCENARIOS
    from .stdio import StdioTarget, probe_stdio

    t = StdioTarget(argv=command, tool=args.tool, args=args.args)
    only = _only(args, STDIO_SCENARIOS, "runs over stdio; these do")
    if not only:
        return 2
    return _outcome(
        args,
        probe_stdio(t, only, _say(args)),
        lambda why: dict(untested(t.name, why), transport="stdio"),
    )


def _only(args: argparse.Namespace, scenarios: tuple[str, ...], these: str) -> tuple[str, ...]:
    """The ``--only`` scenarios among ``scenarios`` (all of them by default); when none is,
    stderr says so and names ``these`` (e.g. "runs over stdio; these do")."""
    only = tuple(n for n in (args.only or scenarios) if n in scenarios)
    if not only:
        sys.stderr.write(
            f"mcp-inflight probe: none of the chosen scenarios {these}: "
            + ", ".join(scenarios)
            + "\n"
        )
    return only


def _outcome(
    args: argparse.Namespace,
    run: Coroutine[Any, Any, dict[str, Any]],
    cannot: Callable[[str], dict[str, Any]],
) -> int:
    """Run the probe ``run``, save its records (``--records``) and print its report; a probe
    that cannot test reports ``cannot(why)`` instead."""
    try:
        report = asyncio.run(run)
    except records.CannotTest as exc:
        report = cannot(str(exc))
    else:
        _save_records(args, report)
    return _emit(args, report)


def _say(args: argparse.Namespace) -> Any:
    """The progress lines on stderr, unless ``--quiet``."""

    def say(text: Any) -> None:
        if not args.quiet:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    return say


def _run_stateless(args: Any, t: Any, say: Any) -> int:
    from .stateless import probe_stateless

    only = _only(args, records.STATELESS_SCENARIOS, "runs on 2026-07-28; these do")
    if not only:
        return 2
    return _outcome(
        args,
        probe_stateless(t, only, say, revision=args.revision),
        lambda why: dict(untested(args.url, why), revision=args.revision),
    )


def _run_tasks(args: Any, t: Any, say: Any) -> int:
    """``--tasks``: ``t`` a :class:`.recording.Target` (a URL) or, with ``--stdio``, a
    :class:`.stdio_channel.StdioTarget` (each session a process of the command)."""
    from .task_scenarios import TaskTarget, probe_tasks

    only = _only(args, records.TASK_SCENARIOS, "is a task scenario; these are")
    if not only:
        return 2
    tt = TaskTarget(t, args.task_tool, args.task_args)
    return _outcome(
        args,
        probe_tasks(tt, only, say),
        lambda why: dict(untested(t.name, why), planned=list(records.TASK_SCENARIOS)),
    )


def _save_records(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Take the wire records out of ``report`` and write them to ``--records``, if given."""
    recorded = report.pop("records")
    if args.records:
        with open(args.records, "w") as fh:
            json.dump({"calibration": report["calibration"], "records": recorded}, fh, indent=1)


def _emit(args: Any, report: Any) -> int:
    if args.junit_xml:
        with open(args.junit_xml, "w") as fh:
            fh.write(junit_xml(report))
    if args.json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        sys.stdout.write(render(report) + "\n")
    return report["exit"]


def main() -> int:
    return run(sys.argv[1:])
