"""What ``mcp-inflight check`` runs, section by section, and where: the session model's runs in
this process (and their own pools), and beside them, in two forked worker processes, the
session's rule discipline and sensitivity and each declared model (lease, rounds, resume, tasks,
subscriptions), one job each.  The sections share nothing but the checkers' cache on disk; their
records come back to ``cli.py``, which writes the one report.  Without fork, or on one core, the
jobs run in this process when their results are asked for."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from typing import Any, TypeVar

from mcp_inflight.model.config import Config

T = TypeVar("T")


def liveness(args: argparse.Namespace) -> bool:
    """Liveness is judged when asked, and by default at --requests 2 or fewer (where keeping
    the graph is cheap)."""
    return args.liveness or args.requests <= 2


def reference_paths() -> bool:
    """Whether ``MCP_INFLIGHT_REFERENCE`` asks ``check`` for its reference paths (the symmetry
    check on the compiled rules, not in C; the prover after the explorer): the same verdicts,
    slower."""
    return os.environ.get("MCP_INFLIGHT_REFERENCE", "") not in ("", "0")


def session_section(
    args: argparse.Namespace, cfgs: list[Config], cache: str
) -> tuple[Any, Any, list[Any]]:
    """The session model's runs: the symmetry check, then the explorer and the prover (each
    spread over worker processes; the prover's started first, to prove while the explorer
    searches); returns (explored, proved, symmetry cells).  The symmetry check and the
    explorer are the one explorer's on the session's declaration
    (``proofs/explorer.py:search_session``).
    ``MCP_INFLIGHT_REFERENCE=1``: the reference paths (the symmetry check on the compiled
    rules rather than in C, the prover after the explorer)."""
    from mcp_inflight.proofs import session_run

    # --no-symmetry: no reduction anywhere (the explorer's, the bounded search's id order)
    checked: list[bool | str] = [False] * len(cfgs)
    sym_cells: list[Any] = []
    results = proofs = None
    if not args.no_symmetry:
        # the one explorer's declared symmetry check (in C where the native engine runs, the
        # compiled rules' on the reference paths): the explorer reduces where it passed, on
        # its verdict, and the prover's bounded search takes ids in order
        engine = "auto" if reference_paths() else session_run.ENGINES[args.engine]
        told = symmetry_checked(cfgs, cache, engine)
        checked = list(told)
        sym_cells = [session_run.symmetry_cell(c, t) for c, t in zip(cfgs, told, strict=True)]
    symmetric = [isinstance(t, str) and session_run.reducible(t) for t in checked]
    with ExitStack() as stack:

        def prover(background: bool) -> Callable[[], Any]:
            from mcp_inflight.proofs.prove_runs import proving

            jobs = min(2, os.cpu_count() or 1)
            return stack.enter_context(
                proving(
                    cfgs,
                    depth=args.depth,
                    timeout=args.timeout,
                    budget=args.budget,
                    jobs=jobs,
                    progress=not args.json and sys.stderr.isatty(),
                    cache=cache,
                    symmetric=symmetric,
                    background=background and jobs > 1,
                )
            )

        early = not args.no_prove and not reference_paths()
        proved = prover(True) if early else None
        if not args.no_explore:
            from mcp_inflight.proofs.explorer import search_sessions
            from mcp_inflight.proofs.progress import Display

            results = search_sessions(
                cfgs,
                symmetry=checked,
                max_states=args.max_states,
                progress=False if args.no_progress else Display(sys.stderr),
                engine=args.engine,
                liveness=liveness(args),
            )
        if not args.no_prove:
            proofs = (proved or prover(False))()
    return results, proofs, sym_cells


def symmetry_checked(cfgs: list[Config], cache: str | None, engine: str) -> list[str]:
    """The declared symmetry check of each of ``cfgs``' declaration
    (``model/session_spec.py``), as the one explorer words it
    (``proofs/explorer.py:reduction``: ``reduced: ...`` where its reduction is sound, else
    ``unreduced: ...`` and the renaming that breaks it): whether each run is reduced, for the
    explorer and the prover's bounded search alike.  Kept in the checkers' cache on disk
    (``cache="use"``; None: neither read nor written), keyed by the model's and checkers'
    source."""
    from mcp_inflight.model.session_spec import spec
    from mcp_inflight.proofs import cache as store
    from mcp_inflight.proofs.explorer import reduction

    out = []
    for cfg in cfgs:
        key = store.source_key("declared-symmetry", cfg, engine)
        told = store.load("symmetry", key) if cache == "use" else None
        if not isinstance(told, str):
            told = reduction(spec(cfg), engine)
            if cache is not None:
                store.store("symmetry", key, told)
        out.append(told)
    return out


def session_extras(
    args: argparse.Namespace, cfgs: list[Config], cache: str
) -> tuple[list[Any], list[Any]]:
    """The session model's rule discipline on each of ``cfgs`` and (unless left out) its
    sensitivity; returns (discipline cells, sensitivity cells)."""
    from mcp_inflight.proofs import discipline

    rules = [discipline.session(c) for c in cfgs]
    sens: list[Any] = []
    if not args.no_sensitivity and not args.no_explore:
        from mcp_inflight.proofs.sensitivity import sensitivity

        sens = sensitivity(["session"], cache)
    return rules, sens


def declared_sections(
    args: argparse.Namespace, plan: dict[str, list[str]], bounds: dict[str, int], cache: str
) -> tuple[list[Any], list[Any], list[Any]]:
    """Models of ``plan`` that are not the session: their runs (``check_declared.Run``), their
    rule discipline and their sensitivity; returns (runs, discipline cells, sensitivity
    cells)."""
    from mcp_inflight.proofs import discipline

    if not args.no_progress:
        from mcp_inflight.proofs.explored import progress_to
        from mcp_inflight.proofs.progress import Display, Patient

        # beside the session's live line: plain lines, and only for a run that lasts
        progress_to(Patient(Display(sys.stderr, live=False)))
    from mcp_inflight import check_declared

    runs = check_declared.section(cache, plan, not args.no_prove, bounds)
    rules = [
        discipline.small(check_declared.module(m).spec(d, **check_declared.bounds_of(m, bounds)))
        for m, designs in plan.items()
        for d in designs
    ]
    sens: list[Any] = []
    others = [m for m in plan if m != "session"]
    if not others:
        return runs, rules, sens
    if not args.no_sensitivity and not args.no_explore:
        from mcp_inflight.proofs.sensitivity import sensitivity

        sens = sensitivity(others, cache)
    return runs, rules, sens


def pool(stack: ExitStack, jobs: int) -> ProcessPoolExecutor | None:
    """Forked worker processes kept to ``stack``'s block (stopped with it), or None where fork
    is missing or there is one core."""
    import multiprocessing as mp

    if (os.cpu_count() or 1) < 2 or "fork" not in mp.get_all_start_methods():
        return None
    from mcp_inflight.proofs.pool import worker_pool

    return stack.enter_context(worker_pool(jobs, mp.get_context("fork")))


def beside(pool: ProcessPoolExecutor | None, fn: Callable[..., T], *fargs: Any) -> Callable[[], T]:
    """Start ``fn(*fargs)`` in ``pool`` and return what waits for its result; without a pool,
    the call runs when its result is asked for."""
    if pool is None:
        return lambda: fn(*fargs)
    return pool.submit(fn, *fargs).result
