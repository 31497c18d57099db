"""What every command line of the package shares: the parser class, argument types, the
profile and prover options, output-path checks and signal handling.

The subcommands' modules (``cli.py``, ``cli_prove.py``, ``serve.py``) import these from here
and never from one another, so no command-line module imports another's (``tests/test_layers.py`` fails on any import cycle).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NoReturn

from mcp_inflight.model.config import CLIENTS, REVISIONS, TRANSPORTS

if TYPE_CHECKING:
    from mcp_inflight.proofs.records import ProveResult

DEFAULT_IDS = 2
DEFAULT_REQUESTS = 2


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def choice(valid: Sequence[str], what: str) -> Callable[[str], str]:
    def parse(v: str) -> str:
        if v not in valid:
            raise argparse.ArgumentTypeError(f"unknown {what} {v!r}; valid: {', '.join(valid)}")
        return v

    return parse


def whole_number(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {v!r}") from None


def positive(v: str) -> int:
    n = whole_number(v)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {v!r}")
    return n


def writable_file(path: str) -> str | None:
    """Why ``path`` cannot be written (a message), or None.  Checked before a long run so that
    a typo in an output path fails at once rather than after the run; a file that did not
    exist is not left behind."""
    existed = os.path.lexists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    if not existed:
        os.unlink(path)
    return None


def unwritable(prog: str, option: str, path: str | None) -> bool:
    """Whether ``path``, given to ``option``, cannot be written (see :func:`writable_file`); if
    so, says why on stderr as a usage error of ``prog``."""
    why = writable_file(path) if path else None
    if why is not None:
        sys.stderr.write(f"{prog}: error: {option}: {why}\n")
    return why is not None


def add_profile_options(
    p: argparse.ArgumentParser,
    designs: list[str],
    design_help: str,
    default_design: str | None = "atomic",
) -> None:
    """``--design`` (one of ``designs`` or all), ``--revision`` and ``--transport``."""
    p.add_argument(
        "--design",
        default=default_design,
        type=choice(designs + ["all"], "design"),
        help=design_help,
    )
    p.add_argument(
        "--revision",
        default="all",
        type=choice(list(REVISIONS) + ["all"], "revision"),
        help="2025-11-25 | 2026-07-28 | all (default: all)",
    )
    p.add_argument(
        "--transport",
        default="all",
        type=choice(list(TRANSPORTS) + ["all"], "transport"),
        help="stdio | http | all (default: all)",
    )
    p.add_argument(
        "--client",
        default="reusing",
        type=choice(list(CLIENTS) + ["compliant"], "client"),
        help="the client's id rule: reusing (reuses an id once answered: 2026-07-28's rule, "
        "common practice on 2025-11-25), fresh (never reuses an id in the session: "
        "2025-11-25's rule) or compliant (the rule of each run's revision) (default: reusing)",
    )


def add_prover_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The prover's ``--depth``, ``--budget`` and ``--timeout``, for ``check`` and ``prove``."""
    from mcp_inflight.proofs.prove import DEFAULT_BUDGET, DEFAULT_DEPTH, DEFAULT_TIMEOUT

    p.add_argument(
        "--depth",
        type=positive,
        default=DEFAULT_DEPTH,
        help=f"{prefix}longest trace bounded model checking looks for (default: {DEFAULT_DEPTH})",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="M",
        help=f"{prefix}millions of z3 resource units per solver query; the units count the "
        "solver's work, not seconds, so a loaded machine reaches the same verdicts. A query "
        f"that runs out is 'unknown' and fails the run (default: {DEFAULT_BUDGET:g})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"{prefix}wall-clock seconds per solver query, a backstop behind --budget; "
        f"running out fails the run (default: {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help=f"{prefix}prove every configuration again (and store the results) instead of "
        "reading its finished result from the cache (~/.cache/mcp-inflight/proofs, keyed by a "
        "hash of the model's and the checkers' source, the z3 version, the design, profile, "
        "--depth, --budget and --timeout)",
    )


def prover_usage_error(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for opt in ("budget", "timeout"):
        if getattr(args, opt) <= 0:
            parser.error(f"--{opt} must be positive")


def unknown_note(proofs: Iterable[ProveResult]) -> str:
    """The line saying which invariants the solver gave up on, or ``""``."""
    unknown = [
        f"{p.name} on {r.cfg.label} ({p.note})"
        for r in proofs or []
        for p in r.proofs + ([r.in_range] if r.in_range is not None else [])
        if p.applies and p.kind in ("invariant", "typedness") and p.status == "unknown"
    ]
    if not unknown:
        return ""
    return "UNKNOWN: the solver gave up on " + "; ".join(unknown) + "; this is not a pass\n"


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """SIGTERM ends the process through ``SystemExit`` (as Ctrl-C does through
    ``KeyboardInterrupt``), so the checkers' worker pools are terminated on the way out."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
