"""Command line: ``mcp-inflight lease`` (the lease protocol of many workers sharing a store),
and the short section ``mcp-inflight check`` prints about it."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from mcp_inflight.cli_common import Parser, choice, positive, stop_on_signals
from mcp_inflight.model import lease as L

DEFAULT = L.Config()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mcp-inflight lease",
        description="Check the lease protocol of several workers sharing one store (Redis): "
        "the in-flight claim as one atomic store operation handing out a fencing token, leases "
        "with a TTL and renewal, every shared write and release checked against the token, and "
        "workers that crash, pause past their lease and resume. For each design the explorer "
        "visits every reachable state within the bounds (breadth-first, so every "
        "counterexample is a shortest one) and judges the invariants, the liveness property "
        "ids_free_after_lease (on the explored graph) and the witnesses; the z3 prover proves "
        "the invariants by induction for any number of workers, requests and ids, or gives a "
        "counterexample to induction. The hazard 'failover' (an asynchronously replicated "
        "store promoting a replica that missed the last claim) is explored on its own, with "
        "its traces, and never changes the exit code. Exit 0 when the selected design (with "
        "'all': fenced) holds every invariant, explored and proved, meets the liveness "
        "property and reaches every witness; the mutants are reported with their traces. "
        "1 otherwise; 2 on a usage error.",
    )
    p.add_argument(
        "--design",
        default="all",
        type=choice(list(L.DESIGNS) + ["all"], "design"),
        help="fenced (the design built), a mutant ("
        + ", ".join(f"{k}: {d.doc}" for k, d in L.MUTANTS.items())
        + "), or all (default: all; the exit code is then fenced's)",
    )
    p.add_argument(
        "--workers",
        type=positive,
        default=DEFAULT.workers,
        help=f"worker processes (default: {DEFAULT.workers})",
    )
    p.add_argument(
        "--requests",
        type=positive,
        default=DEFAULT.requests,
        help=f"request instances a run may receive (default: {DEFAULT.requests}; every "
        "counterexample needs at most two)",
    )
    p.add_argument(
        "--ids", type=positive, default=DEFAULT.ids, help=f"request ids (default: {DEFAULT.ids})"
    )
    p.add_argument("--no-prove", action="store_true", help="run only the explorer")
    p.add_argument("--no-hazard", action="store_true", help="skip the failover hazard run")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return p


@dataclass
class LeaseRun:
    """The one checker's results (``proofs.declared.Checked``: explored, proved) for each
    design, and the hazard run (``proofs.declared.HazardRun``)."""

    cfg: L.Config
    designs: list[str]
    checked: dict[str, Any] = field(default_factory=dict)
    hazard: Any = None

    @property
    def explored(self) -> dict[str, Any]:
        return {d: c.explored for d, c in self.checked.items()}

    @property
    def proved(self) -> dict[str, Any]:
        return {d: c.proved for d, c in self.checked.items() if c.proved is not None}

    @property
    def judged(self) -> str:
        """The design whose verdict is the exit code."""
        return "fenced" if len(self.designs) > 1 else self.designs[0]

    @property
    def ok(self) -> bool:
        d = self.judged
        proved = self.proved.get(d)
        return self.explored[d].ok and (proved is None or proved.ok)

    def to_json(self) -> dict[str, Any]:
        c = self.cfg
        return {
            "ok": self.ok,
            "judged": self.judged,
            "bounds": {"workers": c.workers, "requests": c.requests, "ids": c.ids},
            "designs": [
                {
                    "design": d,
                    "doc": L.DESIGNS[d].doc,
                    "explore": self.explored[d].to_json(),
                    "prove": None if d not in self.proved else self.proved[d].to_json(),
                }
                for d in self.designs
            ],
            "hazards": [] if self.hazard is None else [self.hazard.to_json()],
        }


def run_lease(
    cfg: L.Config, designs: list[str], prove: bool = True, hazard: bool = True
) -> LeaseRun:
    from mcp_inflight.proofs.declared import check
    from mcp_inflight.proofs.declared import hazard as run_hazard

    out = LeaseRun(cfg, designs)
    for d in designs:
        c = L.Config(L.DESIGNS[d], cfg.workers, cfg.requests, cfg.ids)
        out.checked[d] = check(L.spec_of(c), with_proof=prove)
    if hazard:
        h = L.Config(L.FENCED, cfg.workers, cfg.requests, cfg.ids, failover=True)
        out.hazard = run_hazard(L.FAILOVER, L.spec_of(h))
    return out


def _cell(run: LeaseRun, d: str, name: str) -> str:
    ex = run.explored[d]
    v = ex.verdicts[name]
    n = len(ex.traces.get(name, ()))
    if v in ("reached", "not reached"):
        return f"reached ({n})" if v == "reached" else "NOT REACHED"
    text = "holds" if v == "holds" else f"FAILS ({n})"
    pr = run.proved.get(d)
    if pr is not None and name in pr.verdicts:
        word = pr.word(name)
        text += {"not proved": " cti", "unknown": " UNKNOWN"}.get(word, " " + word)
    return text


def text(run: LeaseRun) -> str:
    from mcp_inflight.proofs.declared import cti_lines, trace_text

    c = run.cfg
    lines = [
        f"The lease protocol: {c.workers} workers, {c.requests} request instances, {c.ids} "
        f"id{'s' if c.ids != 1 else ''} explored"
        + ("; invariants proved for any number" if run.proved else ""),
        "",
    ]
    for d in run.designs:
        r = run.explored[d]
        pr = run.proved.get(d)
        lines.append(
            f"{d}: {L.DESIGNS[d].doc}\n  {r.states:,} states, {r.transitions:,} transitions, "
            f"depth {r.depth}, {r.seconds:.2f} s"
            + ("" if pr is None else f"; prover {pr.seconds:.2f} s, {pr.queries} queries")
        )
    sp = run.explored[run.designs[0]].spec
    names = [p.name for p in sp.props]
    width = max(len(n) for n in names) + 2
    cols = [max(len(d), 18) + 2 for d in run.designs]
    lines.append("")
    lines.append(
        "property".ljust(width)
        + "".join(d.ljust(w) for d, w in zip(run.designs, cols, strict=True))
    )
    for n in names:
        row = n.ljust(width)
        for d, w in zip(run.designs, cols, strict=True):
            row += _cell(run, d, n).ljust(w)
        lines.append(row.rstrip())
    lines.append("  (n): the length of the shortest trace; proved: by induction, for any number")
    for d in run.designs:
        r = run.explored[d]
        pr = run.proved.get(d)
        for p in r.spec.props:
            v = r.verdicts[p.name]
            if v != "fails":
                continue
            lines += ["", f"{d}: counterexample: {p.name} ({p.kind}) -- {p.doc}"]
            lines += trace_text(r.traces[p.name])
            if p.kind == "liveness":
                lines.append(f"  from here no state where {p.name}'s goal holds is reachable")
            if pr is not None and p.name in pr.ctis:
                lines += cti_lines(pr.ctis[p.name])
        if pr is not None:
            for name, v in pr.verdicts.items():
                if v == "unknown":
                    lines.append(f"{d}: UNKNOWN: {name}: {pr.notes.get(name, '')}")
            if pr.verdicts.get("in_range") != "proved":
                lines.append(f"{d}: in_range {pr.verdicts['in_range']}")
                lines += cti_lines(pr.ctis["in_range"]) if "in_range" in pr.ctis else []
        for p in r.spec.props:
            if r.verdicts[p.name] == "not reached":
                lines.append(f"{d}: witness {p.name} not reached")
        lines += [f"{d}: ERROR {e}" for e in r.errors]
        if r.dead_actions:
            lines.append(f"{d}: dead actions (never fired): {', '.join(r.dead_actions)}")
    if run.hazard is not None:
        lines += ["", *hazard_lines(run.hazard)]
    return "\n".join(lines)


def hazard_lines(h: Any) -> list[str]:
    from mcp_inflight.proofs.declared import trace_text

    lines = [
        f"Hazard {h.hazard.name} ({h.run.spec.design}, the failover action enabled; "
        f"{h.run.states:,} states): {h.hazard.doc}."
    ]
    if not h.broken:
        lines.append("  no invariant breaks within the bounds")
    for n in h.broken:
        lines.append(f"  breaks {n}:")
        lines += trace_text(h.run.traces[n])
    lines.append(f"  What a deployment must do: {h.hazard.remedy}.")
    return lines


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    stop_on_signals()
    designs = list(L.DESIGNS) if args.design == "all" else [args.design]
    cfg = L.Config(L.FENCED, args.workers, args.requests, args.ids)
    try:
        res = run_lease(cfg, designs, prove=not args.no_prove, hazard=not args.no_hazard)
    except KeyboardInterrupt:
        sys.stderr.write("mcp-inflight lease: interrupted\n")
        return 130
    if args.json:
        json.dump(res.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text(res) + "\n")
        what = "every invariant holds" + (" and is proved" if res.proved else "")
        sys.stdout.write(
            f"OK: {res.judged}: {what}, ids_free_after_lease holds, every witness is reached\n"
            if res.ok
            else f"FAILED: {res.judged}: see the table and counterexamples above\n"
        )
    return 0 if res.ok else 1


# --- the section of ``mcp-inflight check`` --------------------------------------------------


@dataclass
class Section:
    """The lease's part of ``mcp-inflight check`` as plain data (its cells, its JSON and the
    line above its table), so that it can be kept in the checkers' cache."""

    designs: list[str]
    states: int
    proved: bool
    cells: list[Any]  # proofs.outcome.Cell
    json: dict[str, Any]
    config: L.Config = DEFAULT  # the bounds it ran at

    @property
    def ok(self) -> bool:
        from mcp_inflight.proofs.outcome import ok

        return ok(self.cells)

    def to_json(self) -> dict[str, Any]:
        return self.json


def section(res: LeaseRun) -> Section:
    """``res`` as :class:`Section` (its cells: the failover hazard is judged on fenced)."""
    from mcp_inflight.proofs.outcome import lease_cells

    cs = [
        c
        for d in res.designs
        for c in lease_cells(res.checked[d], res.hazard if d == "fenced" else None)
    ]
    states = res.explored[res.designs[0]].states
    return Section(list(res.designs), states, bool(res.proved), cs, res.to_json(), res.cfg)


def check_section(
    cache: str | None = "use",
    designs: list[str] | None = None,
    prove: bool = True,
    bounds: dict[str, int] | None = None,
) -> Section:
    """``designs`` (default: fenced) at ``bounds`` (default: the model's defaults; names from
    ``model/lease.py``'s ``BOUNDS``), explored and (unless ``prove`` is false) proved, and the
    failover hazard; read from the checkers' cache when the model and checkers are unchanged
    (``cache="use"``; :func:`section_key`), computed afresh and stored with ``"refresh"``,
    neither read nor stored with ``None``.  A section with a verdict the solver could not
    decide is never stored."""
    from mcp_inflight.proofs import cache as store

    designs = designs or ["fenced"]
    cfg = config(bounds)
    key = section_key(designs, prove, cfg)
    if cache == "use":
        found = store.load("lease", key)
        if isinstance(found, Section):
            return found
    res = run_lease(cfg, designs, prove=prove)
    unknown = any(v == "unknown" for pr in res.proved.values() for v in pr.verdicts.values())
    out = section(res)
    if cache is not None and not unknown:
        store.store("lease", key, out)
    return out


def config(bounds: dict[str, int] | None = None) -> L.Config:
    """The run at ``bounds`` (the names of ``model/lease.py``'s ``BOUNDS``), else the defaults."""
    b = bounds or {}
    d = DEFAULT
    return L.Config(
        d.design, b.get("workers", d.workers), b.get("requests", d.requests), b.get("ids", d.ids)
    )


def section_key(designs: list[str], prove: bool, cfg: L.Config = DEFAULT) -> str:
    """The cache key of :func:`check_section` for ``designs`` at ``cfg``'s bounds."""
    from mcp_inflight.proofs import cache as store

    return store.source_key("lease-check", cfg, tuple(designs), prove)


def cells(res: Section) -> list[Any]:
    """The section's cells in the one result vocabulary (``proofs/outcome.py``)."""
    return res.cells


def check_text(res: Section) -> str:
    from mcp_inflight.report import cells_text

    c = res.config
    how = (
        "invariants proved for any number of workers, instances and ids"
        if res.proved
        else ("explored only")
    )
    title = (
        f"Many workers, the lease protocol ({', '.join(res.designs)}; {c.bounds_label} "
        f"explored: {res.states:,} states; {how}; "
        "'mcp-inflight lease' for more):"
    )
    return cells_text(title, res.cells)
