"""How long ``mcp-inflight check`` takes as a user meets it: cold, warm, and warm in a new process.

    .venv/bin/python bench/check_time.py [--runs 3] [-- CHECK ARGS...]

Side by side in one run (the machine's load is printed before and after):

1. ``check --no-cache``: every proof, symmetry check, small-model section and sensitivity run
   made afresh (and stored);
2. ``check`` right after, reading what run 1 stored: the explorer still runs, the rest comes
   from the checkers' cache;
3. ``check`` again, each run under another ``PYTHONHASHSEED``: a cache key that followed the
   process's string hashing would miss here and cost as much as run 1;
4. ``check --no-cache`` again: every proof, check and run made afresh as in run 1, with the C of
   the native engines (keyed by their source, built in run 1) read from the cache, as a user
   meets it from the second run after a change of the model.

Each figure is the median wall time of ``--runs`` runs (run 1 once: it is the slowest), with
the ratio to run 1.  Every run must exit 0 with the same verdict line.

``--base-rev REV`` also times the cold run of git revision REV (its tree unpacked to a
temporary directory and run through its ``typecheck/`` links, so that the package of REV is
the one imported), in turns with this tree's cold run (``--runs`` pairs), each run with an empty
cache of its own: the cold check before and now, side by side, with their ratio pair by pair;
then, in turns too, each tree's ``--no-cache`` again on its own cache (the C built).  Both must
give the same verdict line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: CPU seconds (user + system) of every finished run, this tree's and the base's, by label
CPU: dict[str, list[float]] = {}


def _subreaper() -> bool:
    """Linux: become the reaper of the checks' orphans (the prover's forkserver outlives the
    check that started it, and its CPU, with its workers', would be counted nowhere)."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap_orphans(deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(
    args: list[str], env: dict[str, str], root: Path = ROOT, label: str = "now"
) -> tuple[float, str]:
    c0 = _cpu()
    t0 = time.monotonic()
    cwd = root
    if root != ROOT:
        # from the links' directory: ``-m`` puts the working directory first on the path, and
        # the tree's own ``mcp_inflight/`` lacks model/, proofs/ and impl/ (mapped at install)
        env, cwd = {**env, "PYTHONPATH": str(root / "typecheck")}, root / "typecheck"
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
    )
    dt = time.monotonic() - t0
    _reap_orphans()
    CPU.setdefault(label, []).append(_cpu() - c0)
    if p.returncode != 0:
        sys.exit(
            f"check {' '.join(args)} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
        )
    return dt, p.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base-rev", help="also time the cold check of this git revision, in turns")
    ap.add_argument("check_args", nargs="*", help="arguments for check (after --)")
    args = ap.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not _subreaper():
        print("(not the reaper of orphans here: the prover's CPU may be left out)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MCP_INFLIGHT_CACHE": cache, "PYTHONHASHSEED": "1"}
        cold, verdict = _run(["--no-cache", *args.check_args], env, label="cold")
        warm, seeded, built = [], [], []
        for n in range(args.runs):
            dt, v = _run(["--no-cache", *args.check_args], env, label="built")
            built.append(dt)
            assert v == verdict, (v, verdict)
            dt, v = _run(args.check_args, env, label="warm")
            warm.append(dt)
            assert v == verdict, (v, verdict)
            dt, v = _run(args.check_args, {**env, "PYTHONHASHSEED": str(100 + n)}, label="warm")
            seeded.append(dt)
            assert v == verdict, (v, verdict)
    what = " ".join(["check", *args.check_args])
    print(f"{what}: {verdict}")
    print(f"1. --no-cache:                      {cold:6.1f} s   CPU {CPU['cold'][0]:.1f} s")
    w, s = statistics.median(warm), statistics.median(seeded)
    print(f"2. warm, same hash seed:            {w:6.1f} s   ratio to 1: {w / cold:.3f}")
    print(f"3. warm, a new hash seed each run:  {s:6.1f} s   ratio to 1: {s / cold:.3f}")
    b, bc = statistics.median(built), statistics.median(CPU["built"])
    print(
        f"4. --no-cache, the C built:         {b:6.1f} s   ratio to 1: {b / cold:.3f}"
        f"   CPU {bc:.1f} s (runs: {_list(built)})"
    )
    if args.base_rev:
        _before_and_now(args.base_rev, args.runs, args.check_args, verdict)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def _before_and_now(rev: str, runs: int, check_args: list[str], verdict: str) -> None:
    """The cold check of ``rev`` and of this tree, in turns; medians and ratios pair by pair."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        _imports_from(base)
        before, now, before_built, now_built = [], [], [], []
        for n in range(runs):
            # each run its own empty cache: a native engine built by one is not the other's
            with tempfile.TemporaryDirectory() as c1, tempfile.TemporaryDirectory() as c2:
                env = {**os.environ, "PYTHONHASHSEED": str(n)}
                dt, v = _run(
                    ["--no-cache", *check_args], {**env, "MCP_INFLIGHT_CACHE": c1}, base, rev
                )
                assert v == verdict, (rev, v, verdict)
                before.append(dt)
                dt, v = _run(["--no-cache", *check_args], {**env, "MCP_INFLIGHT_CACHE": c2})
                assert v == verdict, (v, verdict)
                now.append(dt)
                dt, v = _run(
                    ["--no-cache", *check_args],
                    {**env, "MCP_INFLIGHT_CACHE": c1},
                    base,
                    rev + " built",
                )
                before_built.append(dt)
                dt, v = _run(
                    ["--no-cache", *check_args],
                    {**env, "MCP_INFLIGHT_CACHE": c2},
                    label="now built",
                )
                now_built.append(dt)
        ratios = [b / a for a, b in zip(before, now, strict=True)]
        print(f"cold, {rev} then this tree, in turns ({runs} pairs):")
        print(f"   {rev}: {statistics.median(before):6.1f} s  (runs: {_list(before)})")
        print(f"   now: {statistics.median(now):6.1f} s  (runs: {_list(now)})")
        b, n = statistics.median(CPU[rev]), statistics.median(CPU["now"])
        print(f"   CPU seconds, median: {rev} {b:.1f}, now {n:.1f} (ratio {n / b:.3f})")
        print(f"   now / {rev}: {statistics.median(ratios):.3f}  (pairs: {_list(ratios, 3)})")
        ratios = [b / a for a, b in zip(before_built, now_built, strict=True)]
        print(f"--no-cache with the C built, {rev} then this tree, in turns ({runs} pairs):")
        print(f"   {rev}: {statistics.median(before_built):6.1f} s  (runs: {_list(before_built)})")
        print(f"   now: {statistics.median(now_built):6.1f} s  (runs: {_list(now_built)})")
        b, n = statistics.median(CPU[rev + " built"]), statistics.median(CPU["now built"])
        print(f"   CPU seconds, median: {rev} {b:.1f}, now {n:.1f} (ratio {n / b:.3f})")
        print(f"   now / {rev}: {statistics.median(ratios):.3f}  (pairs: {_list(ratios, 3)})")


def _imports_from(root: Path) -> None:
    """Refuse to time ``root`` unless its package is the one imported, model and checkers too
    (an installed package of another tree would otherwise answer for part of it)."""
    probe = "import mcp_inflight.cli, mcp_inflight.proofs.explorer as e; print(e.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root / "typecheck")},
        cwd=root / "typecheck",
        check=True,
    ).stdout.strip()
    if not out.startswith(str(root)):
        sys.exit(f"the revision's package is not the one imported: {out}")


def _list(xs: list[float], digits: int = 1) -> str:
    return ", ".join(f"{x:.{digits}f}" for x in xs)


if __name__ == "__main__":
    raise SystemExit(main())
