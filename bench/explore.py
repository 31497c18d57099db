"""Explorer growth with the bound: symmetry on vs off, measured side by side in one run.

    .venv/bin/python bench/explore.py                      # atomic, every profile, from (2,3)
    .venv/bin/python bench/explore.py --revision 2025-11-25 --transport http --budget 30
    .venv/bin/python bench/explore.py --engines --bounds 2x2   # compiled vs interpreted vs native

For each profile, bounds (ids x requests) grow from the first of --bounds; each bound is
explored with symmetry reduction on and off, one after the other in this process.  The table
gives states, transitions, wall seconds, CPU seconds, states per wall second and the symmetry
reduction factor (states off / states on).  A profile stops growing after the first bound where
a run took longer than --budget seconds; a run cut short by --max-states is marked '>' and its
figures are lower bounds.  --engines instead measures the compiled, the interpreted and (with a
C compiler) the native engine of the one explorer on the session's declaration (all read
model/; see proofs/compiled_spec.py and proofs/native_spec.py) on the same runs.  Wall seconds on a shared machine
are noisy: compare figures of one run, and read CPU seconds beside them.
"""

from __future__ import annotations

import argparse
import sys
import time

from mcp_inflight.model import DESIGNS, Config, mutants, profiles
from mcp_inflight.proofs.explorer import explore

ALL = {**DESIGNS, **mutants()}
DEFAULT_BOUNDS = "2x3,3x3,2x4,3x4,2x5"


def parse_bounds(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        try:
            ids, req = part.lower().split("x")
            out.append((int(ids), int(req)))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad bound {part!r}: write IDSxREQUESTS, e.g. 2x3,3x3"
            ) from None
    return out


def measure(cfg, **kw):
    w0, c0 = time.monotonic(), time.process_time()
    r = explore(cfg, progress=False, **kw)
    return r, time.monotonic() - w0, time.process_time() - c0


HEAD = (
    f"{'profile':<19} {'bound':>5} {'sym':>4} {'states':>10} {'transitions':>12}"
    f" {'wall s':>8} {'cpu s':>7} {'states/s':>9} {'reduction':>9}  verdicts"
)


def row(label, bound, tag, r, wall, cpu, red):
    mark = "" if r.complete else ">"
    red_s = f"{red:>8.2f}x" if red else f"{'':>9}"
    return (
        f"{label:<19} {bound:>5} {tag:>4} {mark + format(r.states, ','):>10}"
        f" {r.transitions:>12,} {wall:>8.2f} {cpu:>7.2f} {r.states / max(wall, 1e-9):>9,.0f}"
        f" {red_s}  {'ok' if r.ok else 'FAIL' if r.complete else 'incomplete'}"
    )


def growth(a) -> None:
    print(
        f"design {a.design}; budget {a.budget:.0f} s per run"
        + (f"; at most {a.max_states:,} states per run" if a.max_states else "")
    )
    print(HEAD)
    for rev, tr in profiles(a.revision, a.transport):
        label = f"{rev} {tr}"
        for ids, req in a.bounds:
            cfg = Config(ALL[a.design], rev, tr, ids=ids, requests=req)
            on = measure(cfg, symmetry=True, max_states=a.max_states)
            off = measure(cfg, symmetry=False, max_states=a.max_states) if not a.no_off else None
            bound = f"{ids}x{req}"
            red = off[0].states / on[0].states if off else None
            print(row(label, bound, "on", *on, red), flush=True)
            if off:
                print(row(label, bound, "off", *off, None), flush=True)
                v_on = [(v.name, v.ok) for v in on[0].verdicts]
                v_off = [(v.name, v.ok) for v in off[0].verdicts]
                if on[0].complete and off[0].complete and v_on != v_off:
                    print(f"  !! verdicts differ with symmetry on and off: {v_on} {v_off}")
            slowest = max(on[1], off[1] if off else 0)
            if slowest > a.budget or not on[0].complete:
                break


def engines(a) -> None:
    from mcp_inflight.proofs import native_build

    nat = native_build.available()
    print(
        f"design {a.design}: compiled vs interpreted"
        + (" vs native (C; build timed apart, not in 'native s')" if nat else "")
        + " engine, same runs"
    )
    print(
        f"{'profile':<19} {'bound':>5} {'sym':>4} {'states':>9} {'compiled s':>11}"
        f" {'interpreted s':>14} {'speed-up':>9}"
        + (f" {'native s':>9} {'build s':>8} {'nat/comp':>9}" if nat else "")
    )
    for rev, tr in profiles(a.revision, a.transport):
        for ids, req in a.bounds:
            cfg = Config(ALL[a.design], rev, tr, ids=ids, requests=req)
            for sym in (True, False):
                rc, wc, _ = measure(cfg, symmetry=sym, max_states=a.max_states, engine="compiled")
                ri, wi, _ = measure(
                    cfg, symmetry=sym, max_states=a.max_states, engine="interpreted"
                )
                same = (rc.states, rc.transitions) == (ri.states, ri.transitions)
                extra = ""
                if nat:
                    b0 = time.monotonic()  # the first run builds the C: its time, less the search's
                    measure(cfg, symmetry=sym, max_states=a.max_states, engine="native")
                    first = time.monotonic() - b0
                    rn, wn, _ = measure(cfg, symmetry=sym, max_states=a.max_states, engine="native")
                    bs = max(0.0, first - wn)
                    same = same and (rn.states, rn.transitions) == (rc.states, rc.transitions)
                    extra = f" {wn:>9.2f} {bs:>8.2f} {wc / max(wn, 1e-9):>8.1f}x"
                print(
                    f"{rev + ' ' + tr:<19} {ids}x{req:<3} {'on' if sym else 'off':>4}"
                    f" {rc.states:>9,} {wc:>11.2f} {wi:>14.2f} {wi / max(wc, 1e-9):>8.1f}x"
                    + extra
                    + ("" if same else "  !! the engines disagree"),
                    flush=True,
                )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[2].replace("\n", " "),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--design",
        default="atomic",
        choices=list(ALL),
        metavar="DESIGN",
        help="a design or mutant: " + ", ".join(ALL),
    )
    p.add_argument("--revision", default="all", choices=["all", "2025-11-25", "2026-07-28"])
    p.add_argument("--transport", default="all", choices=["all", "stdio", "http"])
    p.add_argument(
        "--bounds",
        type=parse_bounds,
        default=DEFAULT_BOUNDS,
        help="bounds to grow through, IDSxREQUESTS, comma-separated",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="stop growing a profile after a run longer than this (seconds)",
    )
    p.add_argument(
        "--max-states",
        type=int,
        default=None,
        help="cut each run at this many states (figures become lower bounds)",
    )
    for flag, helptext in (
        ("--no-off", "skip the runs without symmetry (no reduction factor)"),
        ("--engines", "compare the compiled and the interpreted engine instead"),
    ):
        p.add_argument(flag, action="store_true", help=helptext)
    a = p.parse_args(argv)
    try:
        engines(a) if a.engines else growth(a)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
