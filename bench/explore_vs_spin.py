"""Our explorer against SPIN on the same model, side by side in one run.

    .venv/bin/python bench/explore_vs_spin.py [--designs atomic,unguarded] [--revision all]
        [--transport all] [--bounds 2x2,3x2] [--keep DIR] [--json]

For every design x profile x bound (ids x requests) it runs:

* ours: ``explore(cfg, symmetry=False, engine="compiled")`` and the same with symmetry
  (``mcp_inflight.proofs.explorer``, the one explorer's Python engine on the session's
  declaration), timed around the call; and, when a C compiler is present, its native engine
  (``proofs/native_spec.py``: the same rules generated as C, the whole search in C) on one
  thread and on two, its build (C generation and gcc, into a fresh cache directory) timed apart
  from its search, so that its states per second, like pan's, count the search alone;
* SPIN, end to end and timed as one: the Promela text generated from ``model/`` by
  ``bench/promela.py`` (no hand-written Promela), ``spin -a``, ``gcc -O2 -DSAFETY -DNOCLAIM``
  (safety only, no never claim; no ``-DCOLLAPSE``: on these 30-40 byte state vectors it made
  pan slower, see bench/RESULTS.md), then ``pan -c0 -m<depth> -w<hash>``, the hash table sized
  to about twice the state count.

``-c0`` makes pan go on after errors, to the end of the state space.  Each property has its own
``assert`` guarded by a ``hidden`` flag (outside the state vector), so a property is reported at
most once (``assertion violated P_<name>``): an invariant or hazard holds when it is not
reported; a witness (asserted negated) is reached when it is.  ``P_deadlock`` is a state where
no action is enabled and the model is not ``settled``, as in the explorer.  One run of pan gives
every verdict.  ``-DNOREDUCE`` is irrelevant: there is one process.

State counts: SPIN's "states, stored" is compared with ours without symmetry, one to one.  The
two count the same things: one SPIN state is one model state (one process resting only at its
``do``; every action is one ``d_step``), the initial state counts in both, and the extra
``timeout`` option that judges states with nothing enabled leads back to the state it left, so
it stores nothing.  Any difference is reported as a mismatch (exit 1), never explained away.

Times: ours is the wall time of ``explore`` (the native engine's: build + search); SPIN's "to verdict" is generate + ``spin -a`` + gcc
+ pan, with the phases also shown.  States/s: ours = states / explore time; SPIN's = stored
states / pan's wall time (the search alone) and, in brackets, / end-to-end time.  Ratios are
ours / SPIN: a time ratio below 1 means we are faster; a rate ratio above 1 means we are faster.

Last, unless ``--no-check-time``, the wall time of ``mcp-inflight check --design all --no-prove``
(the explorer at the default bound, every design and profile, with symmetry, in worker
processes), as a new user would run it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from promela import generate, properties_for  # noqa: E402

from mcp_inflight.model import DESIGNS, Config, mutants, profiles  # noqa: E402
from mcp_inflight.proofs.explorer import explore  # noqa: E402

GCC_FLAGS = ["-O2", "-DSAFETY", "-DNOCLAIM"]


class SpinError(RuntimeError):
    pass


def tools_missing() -> list[str]:
    return [t for t in ("spin", "gcc") if shutil.which(t) is None]


def spin_version() -> str:
    try:
        out = subprocess.run(["spin", "-V"], capture_output=True, text=True, check=False)
        return out.stdout.strip()
    except OSError:
        return "spin not found"


def _run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SpinError(
            f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
        )
    return p.stdout + p.stderr


def run_spin(
    cfg: Config,
    workdir: str | os.PathLike,
    depth: int = 200_000,
    hash_bits: int | None = None,
    embedded_c: bool = True,
) -> dict:
    """Generate, compile and run pan for ``cfg`` in ``workdir``; every verdict from one run."""
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    text = generate(cfg, embedded_c=embedded_c)
    (wd / "model.pml").write_text(text)
    t1 = time.monotonic()
    _run(["spin", "-a", "model.pml"], wd)
    t2 = time.monotonic()
    _run(["gcc", *GCC_FLAGS, "-o", "pan", "pan.c"], wd)
    t3 = time.monotonic()
    cmd = ["./pan", "-c0", f"-m{depth}"] + ([f"-w{hash_bits}"] if hash_bits else [])
    p = subprocess.run(cmd, cwd=wd, capture_output=True, text=True)
    t4 = time.monotonic()
    out = p.stdout + p.stderr
    if p.returncode != 0 and "errors:" not in out:
        raise SpinError(f"pan failed ({p.returncode}):\n{out[-3000:]}")
    if "max search depth too small" in out:
        raise SpinError(f"pan: search truncated at depth {depth}; raise --depth")
    m = re.search(r"^\s*(\d+) states, stored", out, re.M)
    if not m:
        raise SpinError(f"no state count in pan's output:\n{out[-3000:]}")
    stored = int(m.group(1))
    trans = int(re.search(r"^\s*(\d+) transitions", out, re.M).group(1))
    depth_reached = int(re.search(r"depth reached (\d+)", out).group(1))
    reported = set(re.findall(r"assertion violated P_(\w+)", out))
    verdicts = {}
    for prop in properties_for(cfg):
        hit = prop.name in reported
        verdicts[prop.name] = hit if prop.kind == "witness" else not hit
    return {
        "states": stored,
        "transitions": trans,
        "depth": depth_reached,
        "verdicts": verdicts,
        "deadlock": "deadlock" in reported,
        "seconds": {
            "generate": t1 - t0,
            "spin_a": t2 - t1,
            "gcc": t3 - t2,
            "pan": t4 - t3,
            "total": t4 - t0,
        },
        "pml_lines": text.count("\n"),
        "cmd": " ".join(cmd),
    }


def run_ours(
    cfg: Config,
    symmetry: bool,
    engine: str = "compiled",
    liveness: bool = False,
    threads: int | None = None,
    optimised: bool = False,
) -> dict:
    if engine == "native":
        # the one explorer's native engine on the session's declaration, called directly for
        # its thread count.  Its build is timed apart from its search: as ``check`` runs it
        # (``optimised`` False: built at -O0, the search, then built at -O1 once the search
        # lasts, all of it in the time to a verdict), or built at -O1 first (``optimised``:
        # the search alone on the build a larger run takes, as pan's is on gcc -O2)
        from mcp_inflight.model.session_spec import spec
        from mcp_inflight.proofs.explorer import NO_LIMIT
        from mcp_inflight.proofs.native_spec import build as build_c
        from mcp_inflight.proofs.native_spec import generate, search_native
        from mcp_inflight.proofs.session_run import reducible, run_result

        sp = spec(cfg, liveness)
        b0 = time.monotonic()
        if optimised:
            build_c(generate(sp, symmetry).source, optimised=True)
        first = time.monotonic() - b0
        t0 = time.monotonic()
        ex = search_native(sp, max_states=NO_LIMIT, symmetry=symmetry, threads=threads)
        sec = time.monotonic() - t0
        r = run_result(cfg, ex, reducible(ex.symmetry) if symmetry else False, liveness)
        build, sec = first + ex.build_seconds, sec - ex.build_seconds
    else:
        t0 = time.monotonic()
        r = explore(cfg, symmetry=symmetry, progress=False, engine=engine, liveness=liveness)
        sec, build = time.monotonic() - t0, 0.0
    return {
        "engine": engine,
        "build_seconds": build,
        "states": r.states,
        "transitions": r.transitions,
        "seconds": sec,
        "verdicts": {v.name: v.ok for v in r.verdicts if v.applies},
        "deadlock": r.deadlocks > 0,
        "complete": r.complete,
    }


def native_available() -> bool:
    from mcp_inflight.proofs import native_build

    return native_build.available()


def compare(cfg: Config, workdir, depth=200_000, embedded_c=True, with_native=False) -> dict:
    """One configuration, both checkers: counts, verdicts, times (``with_native``: our native
    engine too, whose counts and verdicts must equal the Python engine's)."""
    nosym = run_ours(cfg, symmetry=False)
    sym = run_ours(cfg, symmetry=True)
    nat = (
        run_ours(cfg, symmetry=False, engine="native", threads=1, optimised=True)
        if with_native
        else None
    )
    # the same on both cores (a level's states expanded on two threads, handed over in order)
    nat2 = (
        run_ours(cfg, symmetry=False, engine="native", threads=2, optimised=True)
        if with_native
        else None
    )
    # as check runs it: native, symmetry on, liveness judged (its C built here, timed)
    as_check = run_ours(cfg, symmetry=True, engine="native", liveness=True) if with_native else None
    # a hash table about twice the expected number of states (pan's default is -w24)
    bits = max(18, math.ceil(math.log2(max(nosym["states"], 1))) + 1)
    spin = run_spin(cfg, workdir, depth=depth, hash_bits=bits, embedded_c=embedded_c)
    kinds = {p.name: p.kind for p in properties_for(cfg)}
    disagree = sorted(n for n in kinds if nosym["verdicts"].get(n) != spin["verdicts"].get(n))
    if nosym["deadlock"] != spin["deadlock"]:
        disagree.append("deadlock")
    native_same = all(
        n is None
        or all(
            n[k] == nosym[k] for k in ("states", "transitions", "verdicts", "deadlock", "complete")
        )
        for n in (nat, nat2)
    )
    if not native_same:
        disagree.append("native engine")
    failed = lambda v: sorted(n for n, ok in v.items() if kinds[n] == "invariant" and not ok)  # noqa: E731
    hazards = lambda v: sorted(n for n, ok in v.items() if kinds[n] == "hazard" and not ok)  # noqa: E731
    unreached = lambda v: sorted(n for n, ok in v.items() if kinds[n] == "witness" and not ok)  # noqa: E731
    return {
        **cfg.fields(),
        "ours": nosym,
        "ours_sym": sym,
        "native": nat,
        "native2": nat2,
        "as_check": as_check,
        "spin": spin,
        "states_match": nosym["states"] == spin["states"],
        "verdicts_agree": not disagree,
        "disagree": disagree,
        "failed_ours": failed(nosym["verdicts"]),
        "failed_spin": failed(spin["verdicts"]),
        "hazards_ours": hazards(nosym["verdicts"]),
        "hazards_spin": hazards(spin["verdicts"]),
        "unreached_ours": unreached(nosym["verdicts"]),
        "unreached_spin": unreached(spin["verdicts"]),
    }


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "spin": spin_version(),
        "gcc": gcc[0] if gcc else "?",
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _table(hdr: str, rows: list[dict]):
    """Print a table's header; yield each row with its profile and bound as printed."""
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        yield r, f"{r['revision']} {r['transport']}", f"{r['ids']}x{r['requests']}"


def _rate(states, sec):
    return states / sec if sec > 0 else float("inf")


def print_report(rows: list[dict], mach: dict, load_after: str, pure: bool = False) -> None:
    w = max([10] + [len(r["design"]) for r in rows])
    print(
        f"machine: {mach['nproc']} cpu, {mach['cpu']}; Python {mach['python']}; {mach['spin']};"
        f" {mach['gcc']}"
    )
    print(f"load average (1, 5, 15 min) before: {mach['load']}; after: {load_after}")
    print(
        f"SPIN: Promela generated from model/ ({'pure Promela' if pure else 'state properties as one c_code function'});"
        f" spin -a; gcc {' '.join(GCC_FLAGS)}; pan -c0 -m<depth> -w<bits>;"
        " one pan run judges every property"
    )
    print()
    print("State counts (ours without symmetry vs SPIN 'states, stored'; one to one) and verdicts")
    hdr = (
        f"{'design':<{w}} {'profile':<17} {'bound':>5} {'ours':>9} {'SPIN':>9} {'match':>5}"
        f" {'ours sym':>9} {'verdicts':>8}  invariants failed (both)"
    )
    for r, prof, bound in _table(hdr, rows):
        fails = ", ".join(r["failed_ours"]) or "none"
        if r["failed_ours"] != r["failed_spin"]:
            fails = f"ours: {fails}; SPIN: {', '.join(r['failed_spin']) or 'none'}"
        print(
            f"{r['design']:<{w}} {prof:<17} {bound:>5} {r['ours']['states']:>9,}"
            f" {r['spin']['states']:>9,} {'yes' if r['states_match'] else 'NO':>5}"
            f" {r['ours_sym']['states']:>9,} {'agree' if r['verdicts_agree'] else 'DIFFER':>8}"
            f"  {fails}"
        )
        extra = []
        for key, what in (("hazards", "hazards failing"), ("unreached", "witnesses unreached")):
            ours, spin = r[f"{key}_ours"], r[f"{key}_spin"]
            if ours or spin:
                theirs = "" if ours == spin else f" (SPIN: {', '.join(spin) or 'none'})"
                extra.append(f"{what}: {', '.join(ours) or 'none'}{theirs}")
        if not r["verdicts_agree"]:
            extra.append("verdicts differ on: " + ", ".join(r["disagree"]))
        for e in extra:
            print(f"{'':<{w}} {'':<17} {'':>5} {e}")
    print()
    print("Time to verdict (seconds) and states per second; ratios ours / SPIN")
    hdr = (
        f"{'design':<{w}} {'profile':<17} {'bound':>5} {'ours':>7} {'sym':>7} {'SPIN':>7}"
        f" {'(gen+spin+gcc+pan)':>24} {'t ours/SPIN':>11} {'t sym/SPIN':>10}"
        f" {'ours st/s':>10} {'sym st/s':>9} {'SPIN st/s (e2e)':>20} {'rate ours/SPIN':>14}"
    )
    for r, prof, bound in _table(hdr, rows):
        o, y, s = r["ours"], r["ours_sym"], r["spin"]
        ss = s["seconds"]
        phases = f"{ss['generate']:.2f}+{ss['spin_a']:.2f}+{ss['gcc']:.2f}+{ss['pan']:.2f}"
        r_o = _rate(o["states"], o["seconds"])
        r_y = _rate(y["states"], y["seconds"])
        r_s = _rate(s["states"], ss["pan"])
        r_e = _rate(s["states"], ss["total"])
        print(
            f"{r['design']:<{w}} {prof:<17} {bound:>5} {o['seconds']:>7.2f} {y['seconds']:>7.2f}"
            f" {ss['total']:>7.2f} {phases:>24} {o['seconds'] / ss['total']:>11.2f}"
            f" {y['seconds'] / ss['total']:>10.2f} {r_o:>10,.0f} {r_y:>9,.0f}"
            f" {f'{r_s:,.0f} ({r_e:,.0f})':>20} {r_o / r_s:>14.3f}"
        )
    print()
    print(
        "Unreduced states per second, side by side: pan (search alone, one core), our Python"
        " engine, our native engine (search alone; its build beside it) on one thread and on"
        " two (both cores); ratios to pan"
    )
    hdr = (
        f"{'design':<{w}} {'profile':<17} {'bound':>5} {'states':>9} {'pan st/s':>10}"
        f" {'Python st/s':>11} {'native st/s':>11} {'2 thr st/s':>11} {'Py/pan':>7}"
        f" {'nat/pan':>7} {'2thr/pan':>8} {'2thr/nat':>8} {'native build s':>14}"
    )
    for r, prof, bound in _table(hdr, rows):
        o, s, n, n2 = r["ours"], r["spin"], r.get("native"), r.get("native2")
        r_s = _rate(s["states"], s["seconds"]["pan"])
        r_o = _rate(o["states"], o["seconds"])
        if n is None or n2 is None:
            nat = f"{'-':>11} {'-':>11} {r_o / r_s:>7.3f} {'-':>7} {'-':>8} {'-':>8} {'-':>14}"
        else:
            r_n, r_2 = _rate(n["states"], n["seconds"]), _rate(n2["states"], n2["seconds"])
            nat = (
                f"{r_n:>11,.0f} {r_2:>11,.0f} {r_o / r_s:>7.3f} {r_n / r_s:>7.3f}"
                f" {r_2 / r_s:>8.3f} {r_2 / r_n:>8.2f} {n['build_seconds']:>14.2f}"
            )
        print(
            f"{r['design']:<{w}} {prof:<17} {bound:>5} {o['states']:>9,} {r_s:>10,.0f}"
            f" {r_o:>11,.0f} " + nat
        )
    if any(r.get("as_check") for r in rows):
        print()
        print(
            "As check runs it (native engine, symmetry on, liveness judged), time to verdict ="
            " generation and gcc + search, against SPIN end to end (safety only); aim <= 0.5"
        )
        hdr = (
            f"{'design':<{w}} {'profile':<17} {'bound':>5} {'states':>9} {'build s':>8}"
            f" {'search s':>8} {'ours s':>7} {'SPIN s':>7} {'ours/SPIN':>9}"
        )
        for r, prof, bound in _table(hdr, rows):
            c, s = r.get("as_check"), r["spin"]
            if c is None:
                continue
            tot = c["build_seconds"] + c["seconds"]
            print(
                f"{r['design']:<{w}} {prof:<17} {bound:>5} {c['states']:>9,}"
                f" {c['build_seconds']:>8.2f} {c['seconds']:>8.2f} {tot:>7.2f}"
                f" {s['seconds']['total']:>7.2f} {tot / s['seconds']['total']:>9.2f}"
            )
    print()
    print("Aims (at the default bound 2x2; symmetry at every bound):")
    for r in rows:
        o, y, s = r["ours"], r["ours_sym"], r["spin"]
        tag = f"  {r['design']} {r['revision']} {r['transport']} {r['ids']}x{r['requests']}:"
        parts = []
        if (r["ids"], r["requests"]) == (2, 2):
            parts.append(
                f"time below SPIN's: {'yes' if o['seconds'] < s['seconds']['total'] else 'no'}"
            )
            q = _rate(o["states"], o["seconds"]) / _rate(s["states"], s["seconds"]["pan"])
            parts.append(f"rate >= 1/4 of SPIN's: {'yes' if q >= 0.25 else 'no'} ({q:.3f})")
        n = r.get("native")
        if n is not None:
            q = _rate(n["states"], n["seconds"]) / _rate(s["states"], s["seconds"]["pan"])
            parts.append(f"native rate >= 1/2 of pan's: {'yes' if q >= 0.5 else 'no'} ({q:.3f})")
        n2 = r.get("native2")
        if n2 is not None and (r["ids"], r["requests"]) == (3, 2):
            q = _rate(n2["states"], n2["seconds"]) / _rate(s["states"], s["seconds"]["pan"])
            parts.append(
                f"native rate on both cores >= 2x pan's: {'yes' if q >= 2 else 'no'} ({q:.3f})"
            )
        parts.append(f"symmetry fewer states: {'yes' if y['states'] < o['states'] else 'no'}")
        parts.append(f"symmetry less time: {'yes' if y['seconds'] < o['seconds'] else 'no'}")
        print(tag, "; ".join(parts))


def time_check() -> dict:
    """Wall time of ``mcp-inflight check --design all --no-prove``, as a user runs it."""
    exe = Path(sys.executable).with_name("mcp-inflight")
    cmd = [str(exe) if exe.exists() else "mcp-inflight", "check", "--design", "all", "--no-prove"]
    print(f"timing: {' '.join(cmd[1:])} ...", file=sys.stderr, flush=True)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    sec = time.monotonic() - t0
    return {
        "command": "mcp-inflight " + " ".join(cmd[1:]),
        "seconds": sec,
        "exit": p.returncode,
        "load_before": load0,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _bounds(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", part)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise argparse.ArgumentTypeError(f"bound {part!r}: expected IDSxREQUESTS, e.g. 2x2")
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Compare our explorer with SPIN on the model generated from model/: state "
        "counts, verdicts, time to verdict, states per second.",
        epilog="Exit 0 when every count matches and every verdict agrees, 1 otherwise, "
        "2 on a usage error or when spin or gcc is missing.",
    )
    p.add_argument(
        "--designs",
        default="atomic,unguarded",
        help="comma-separated designs or mutants of atomic, e.g. "
        "atomic-free-on-cancel (default: atomic,unguarded)",
    )
    p.add_argument("--revision", default="all", help="2025-11-25, 2026-07-28 or all (default)")
    p.add_argument("--transport", default="all", help="stdio, http or all (default)")
    p.add_argument(
        "--bounds",
        type=_bounds,
        default=_bounds("2x2,3x2"),
        help="comma-separated IDSxREQUESTS bounds (default: 2x2,3x2)",
    )
    p.add_argument(
        "--depth", type=int, default=200_000, help="pan -m search depth (default 200000)"
    )
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the generated .pml, pan.c and pan here (default: a temporary directory)",
    )
    for flag, helptext in (
        (
            "--pure-promela",
            "spell the state properties out in every d_step instead of one "
            "embedded C function (more C for gcc)",
        ),
        ("--no-native", "leave out our native engine (C, no symmetry)"),
        ("--no-check-time", "do not time `mcp-inflight check --design all --no-prove` at the end"),
        ("--json", "print the results as one JSON object"),
    ):
        p.add_argument(flag, action="store_true", help=helptext)
    a = p.parse_args(argv)
    missing = tools_missing()
    if missing:
        print(
            f"explore_vs_spin: {' and '.join(missing)} not found on PATH "
            "(Debian: apt-get install spin gcc)",
            file=sys.stderr,
        )
        return 2
    known = {**DESIGNS, **mutants()}
    designs = [d.strip() for d in a.designs.split(",") if d.strip()]
    bad = [d for d in designs if d not in known]
    if bad:
        p.error(f"unknown design(s) {', '.join(bad)}; valid: {', '.join(known)}")
    try:
        profs = profiles(a.revision, a.transport)
        cfgs = [
            Config(known[d], rev, tr, ids=i, requests=n)
            for d in designs
            for rev, tr in profs
            for i, n in a.bounds
        ]
    except ValueError as e:
        p.error(str(e))
    mach = machine()
    rows = []
    with_native = not a.no_native and native_available()
    with tempfile.TemporaryDirectory(prefix="explore-vs-spin-") as tmp:
        # the native engine builds into a fresh cache: its build time is a real one
        os.environ["MCP_INFLIGHT_CACHE"] = str(Path(tmp) / "cache")
        base = Path(a.keep) if a.keep else Path(tmp)
        for n, cfg in enumerate(cfgs, 1):
            print(
                f"[{n}/{len(cfgs)}] {cfg.label} {cfg.ids}x{cfg.requests} ...",
                file=sys.stderr,
                flush=True,
            )
            wd = base / f"{cfg.design.name}-{cfg.revision}-{cfg.transport}-{cfg.ids}x{cfg.requests}"
            try:
                row = compare(
                    cfg,
                    wd,
                    depth=a.depth,
                    embedded_c=not a.pure_promela,
                    with_native=with_native,
                )
            except SpinError as e:
                print(f"explore_vs_spin: {cfg.label}: {e}", file=sys.stderr)
                return 1
            rows.append(row)
            nat = row["native"]
            print(
                (
                    f"    native {nat['states']:,} in {nat['seconds']:.2f} s"
                    f" (+{nat['build_seconds']:.2f} s build);"
                    if nat
                    else ""
                )
                + f"    states ours {row['ours']['states']:,} in {row['ours']['seconds']:.2f} s,"
                f" with symmetry {row['ours_sym']['states']:,} in"
                f" {row['ours_sym']['seconds']:.2f} s; SPIN {row['spin']['states']:,} in"
                f" {row['spin']['seconds']['total']:.2f} s;"
                f" {'match' if row['states_match'] else 'MISMATCH'},"
                f" verdicts {'agree' if row['verdicts_agree'] else 'DIFFER'}",
                file=sys.stderr,
                flush=True,
            )
    check = None if a.no_check_time else time_check()
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if a.json:
        print(
            json.dumps(
                {
                    "machine": mach,
                    "load_after": load_after,
                    "gcc_flags": GCC_FLAGS,
                    "runs": rows,
                    "check": check,
                },
                indent=1,
            )
        )
    else:
        print_report(rows, mach, load_after, pure=a.pure_promela)
        if check is not None:
            print()
            print(
                f"`{check['command']}`: {check['seconds']:.1f} s wall, exit {check['exit']}"
                f" (load average before: {check['load_before']}; after: {check['load_after']})"
            )
    ok = all(r["states_match"] and r["verdicts_agree"] for r in rows)
    if not ok:
        print("MISMATCH: a count or a verdict differs between the two checkers", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
