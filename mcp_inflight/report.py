"""Reports of the two checkers: text tables, the combined check report, JUnit XML.

The records come from the checkers (``proofs.records.RunResult``/``Verdict``,
``proofs.prove.ProveResult``/``Proof``) and their traces and counterexamples to induction from
``model/trace.py``, which renders each of them one way.  This module lays them out: the
explorer's table, the prover's table, both side by side for ``mcp-inflight check``, and one
JUnit writer for any of the three.  Every report is built from the records, section by section.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from mcp_inflight.model.declare import loop_header
from mcp_inflight.model.trace import trace_lines
from mcp_inflight.proofs.outcome import Cell, session_cells
from mcp_inflight.proofs.prove import BMC_IDS, BMC_REQUESTS
from mcp_inflight.proofs.records import Proof, ProveResult, RunResult, Verdict

_SECTIONS = (
    ("Invariants and witnesses", ("invariant", "witness")),
    ("Protocol hazards (reported, never fail the check)", ("hazard",)),
    ("Liveness (explored graph; weak fairness of the actions each rests on)", ("liveness",)),
)
#: the kinds the prover judges too (liveness is judged on the explored graph only)
_PROVED_KINDS = ("invariant", "hazard")
_LIVENESS_OFF = (
    "  not judged on these runs (the graph is kept at --requests 2 or fewer, or with --liveness)"
)
_R = TypeVar("_R", RunResult, ProveResult)
_AUX_TITLE = "auxiliary invariants (proved with the invariants; part of the model)"


# --- marks --------------------------------------------------------------------------------


def verdict_mark(v: Verdict) -> str:
    """The explorer's verdict in one word."""
    if not v.applies:
        return "n/a"
    if v.kind == "witness":
        return "reached" if v.ok else "UNREACHED"
    return "holds" if v.ok else "FAILS"


def rests_on(v: Verdict) -> str:
    """What a verdict rests on, in words: a witness's path (the actions that must reach it), a
    liveness property's fairness (the actions it assumes weakly fair on this run)."""
    if v.kind == "witness" and v.through:
        return "through " + ", ".join(v.through)
    if v.kind == "liveness" and v.fair is not None:
        return "fair: " + (", ".join(v.fair) if v.fair else "none")
    return ""


def proof_mark(p: Proof) -> str:
    """The prover's verdict in a few words."""
    if not p.applies:
        return "n/a"
    return {
        "proved": "PROVED",
        "trace": "FAILS (trace)",
        "unknown": "UNKNOWN (solver gave up)",
        "cti": "not proved (no trace within depth)",
    }[p.status]


def _trace_text(v: Verdict) -> list[str]:
    """A trace; a liveness trace as a lasso (the prefix, then the loop that repeats forever)."""
    lines = trace_lines(v.trace or ())
    if v.kind != "liveness" or v.loop_start is None:
        return lines
    steps = list(v.trace or ())
    if v.loop_start >= len(steps):
        return lines + ["  (the run stays here for ever: no move it is owed is enabled)"]
    prefix = trace_lines(steps[: v.loop_start])
    loop = [
        ln for n, st in enumerate(steps[v.loop_start :], v.loop_start + 1) for ln in st.lines(n)
    ]
    return prefix + [loop_header(v.loop_start + 1, len(steps))] + loop


def _width(runs: Sequence[RunResult] | Sequence[ProveResult]) -> int:
    return max(len(r.cfg.label) for r in runs)


def _per_run(title: str, runs: Sequence[_R], rows: Callable[[_R, int], Iterable[str]]) -> list[str]:
    """A titled table: ``rows(run, width)`` for each run (``width``: that of the longest run
    label), then a blank line."""
    width: int = _width(runs)
    return [title, *(line for r in runs for line in rows(r, width)), ""]


def _sectioned(rows: Callable[[tuple[str, ...]], list[str]], head: str = "") -> list[str]:
    """One block per section of the verdict tables: its title, ``head`` when it has rows, its
    ``rows(kinds)`` (the liveness section's note when it has none), then a blank line."""
    lines = []
    for section, kinds in _SECTIONS:
        got = rows(kinds)
        lines.append(section)
        if got and head:
            lines.append(head)
        lines.extend(got or [_LIVENESS_OFF] if "liveness" in kinds else got)
        lines.append("")
    return lines


def _each(runs: Sequence[_R], rows: Callable[[_R], Iterable[str]]) -> list[str]:
    """``rows(run)`` for each run, one after another (no title, no blank line)."""
    return [line for r in runs for line in rows(r)]


def _problem_head(kind: str) -> str:
    return "hazard" if kind == "hazard" else "counterexample"


# --- the explorer -------------------------------------------------------------------------


def _verdict_sections(results: Sequence[RunResult]) -> list[str]:
    width = _width(results)
    return _sectioned(
        lambda kinds: [
            f"  {r.cfg.label:<{width}}  {v.kind:<9}  {v.name:<28} {verdict_mark(v):<10}"
            f" {rests_on(v)}".rstrip()
            for r in results
            for v in r.verdicts
            if v.kind in kinds
        ]
    )


def _explore_run(r: RunResult, width: int) -> Iterator[str]:
    extra = "" if r.complete else "  INCOMPLETE (--max-states reached)"
    dead = f"  dead actions: {', '.join(r.dead_actions)}" if r.dead_actions else ""
    dl = f"  deadlocks: {r.deadlocks}" if r.deadlocks else ""
    how = f" ({r.engine})" if r.engine else ""
    errs = f"  ERRORS: {'; '.join(r.errors)}" if r.errors else ""
    yield (
        f"  {r.cfg.label:<{width}}  bounds ids={r.cfg.ids} requests={r.cfg.requests}"
        f"  symmetry={'on' if r.symmetry else 'off'}  {r.states:,} states"
        f"  {r.transitions:,} transitions  depth {r.depth}  {r.seconds:.2f}s{how}{extra}{dead}{dl}"
        f"{errs}"
    )


def _explore_traces(r: RunResult) -> Iterator[str]:
    for v in r.verdicts:
        if v.applies and v.trace is not None and (v.kind != "witness"):
            yield f"{_problem_head(v.kind)}: {v.name} on {r.cfg.label}"
            yield from _trace_text(v)
            yield ""
        if v.applies and v.kind == "witness" and not v.ok:
            yield f"witness unreachable: {v.name} {rests_on(v)} on {r.cfg.label} at this bound"
            yield ""


def explore_text(results: Sequence[RunResult]) -> str:
    """The explorer's report: verdicts, runs, counterexamples."""
    return "\n".join(
        _verdict_sections(results)
        + _per_run("Runs", results, _explore_run)
        + _each(results, _explore_traces)
    )


# --- the prover ---------------------------------------------------------------------------


def _proof_sections(results: Sequence[ProveResult]) -> list[str]:
    lines = []
    width = _width(results)
    for title, kind in (
        ("Invariants (z3)", "invariant"),
        ("Protocol hazards (reported, never fail)", "hazard"),
    ):
        lines.append(title)
        for r in results:
            typed = [r.in_range] if kind == "invariant" and r.in_range is not None else []
            for p in r.of(kind) + typed:
                extra = f"  {p.seconds:.2f}s" if p.applies else ""
                lines.append(f"  {r.cfg.label:<{width}}  {p.name:<28} {proof_mark(p)}{extra}")
        lines.append("")
    return lines


def _auxiliary(r: ProveResult, width: int) -> Iterator[str]:
    kept = [p.name for p in r.of("auxiliary") if p.applies and p.proved]
    dropped = [p.name for p in r.of("auxiliary") if p.applies and not p.proved]
    yield f"  {r.cfg.label:<{width}}  proved: {', '.join(kept) or '-'}"
    if dropped:
        yield f"  {'':<{width}}  not invariants of this design: {', '.join(dropped)}"


def _prove_run(r: ProveResult, width: int) -> Iterator[str]:
    yield (
        f"  {r.cfg.label:<{width}}  {r.queries} queries  {r.seconds:.2f}s  bounded search: "
        f"depth {r.depth}, {BMC_REQUESTS} requests, {BMC_IDS} ids  "
        f"slowest query {r.slowest[0]:.2f}s ({r.slowest[1]})"
    )


def _proof_problems(r: ProveResult) -> Iterator[str]:
    for p in r.proofs + ([r.in_range] if r.in_range is not None else []):
        if not p.applies or p.kind == "auxiliary" or p.proved:
            continue
        if p.status == "trace" and p.trace is not None:
            yield f"{_problem_head(p.kind)}: {p.name} on {r.cfg.label} (bounded model checking)"
            yield from trace_lines(p.trace)
        elif p.status == "unknown":
            yield f"unknown: {p.name} on {r.cfg.label}: the solver gave up ({p.note})"
        else:
            yield f"not proved: {p.name} on {r.cfg.label}: {p.note}"
        if p.cti:
            yield from p.cti.lines()
        yield ""


def prove_text(results: Sequence[ProveResult]) -> str:
    """The prover's report: verdicts, auxiliary invariants, runs, what was not proved."""
    return "\n".join(
        _proof_sections(results)
        + _per_run("A" + _AUX_TITLE[1:], results, _auxiliary)
        + _per_run("Runs", results, _prove_run)
        + _each(results, _proof_problems)
    )


# --- both ---------------------------------------------------------------------------------


def _side_by_side(results: Sequence[RunResult], proofs: Sequence[ProveResult]) -> list[str]:
    width = _width(results)
    word = {(c.run, c.prop): str(c.word) for c in session_cells(results, proofs)}

    def rows(kinds: tuple[str, ...]) -> list[str]:
        out = []
        for r, pr in zip(results, proofs, strict=False):
            for v in r.verdicts:
                if v.kind in kinds:
                    z = proof_mark(pr.proof(v.name)) if v.kind in _PROVED_KINDS else "-"
                    out.append(
                        f"  {r.cfg.label:<{width}}  {v.kind:<9}  {v.name:<28} "
                        f"{verdict_mark(v):<10} {z:<34} {word[r.cfg.label, v.name]:<16} "
                        f"{rests_on(v)}".rstrip()
                    )
            if "invariant" in kinds and pr.in_range is not None:  # z3 alone proves typedness
                out.append(
                    f"  {r.cfg.label:<{width}}  {'typedness':<9}  {'in_range':<28} {'-':<10} "
                    f"{proof_mark(pr.in_range):<34} {word[r.cfg.label, 'in_range']}"
                )
        return out

    return _sectioned(
        rows,
        f"  {'run':<{width}}  {'kind':<9}  {'property':<28} {'explorer':<10} {'z3':<34} verdict",
    )


def combined_text(results: Sequence[RunResult], proofs: Sequence[ProveResult]) -> str:
    """``mcp-inflight check``: one table with both verdicts side by side, the explorer's runs and
    counterexamples, then the prover's auxiliary invariants, runs and what it did not prove."""
    return "\n".join(
        _side_by_side(results, proofs)
        + _per_run("Runs", results, _explore_run)
        + _each(results, _explore_traces)
        + _per_run("z3: " + _AUX_TITLE, proofs, _auxiliary)
        + _per_run("z3 runs", proofs, _prove_run)
        + _each(proofs, _proof_problems)
    )


# --- JUnit --------------------------------------------------------------------------------


def write_junit(
    path: str, results: Sequence[RunResult] | None, proofs: Sequence[ProveResult] | None = None
) -> None:
    """One test case per run x property: the explorer's verdicts (with the prover's beside them
    when both ran), or the prover's alone when ``results`` is None."""
    if results is None:
        assert proofs is not None
        _write(path, "mcp-inflight prove", _prove_cases(proofs))
    else:
        _write(path, "mcp-inflight check", _check_cases(results, proofs))


_Case = tuple[str, str, float, str | None, str | None, str | None, str]
# (classname, name, seconds, outcome: None | "skipped" | "failure" | "system-out", message, text,
#  what the verdict rests on: a witness's path, a liveness property's fairness, or "")


def _check_cases(results: Sequence[RunResult], proofs: Sequence[ProveResult] | None) -> list[_Case]:
    cases = []
    for k, r in enumerate(results):
        pr = proofs[k] if proofs is not None else None
        for v in r.verdicts:
            outcome = message = text = None
            seconds = r.seconds
            if not v.applies:
                outcome, message = "skipped", "does not apply to this profile"
            elif not v.ok and v.kind != "hazard":
                outcome, message = "failure", f"{v.name} {verdict_mark(v)} {rests_on(v)}".rstrip()
                text = "\n".join(_trace_text(v)) if v.trace else ""
            elif not v.ok:
                outcome, text = "system-out", "\n".join(trace_lines(v.trace or ()))
            if pr is not None and v.applies and v.kind in _PROVED_KINDS:
                p = pr.proof(v.name)
                if v.kind == "invariant" and not p.proved and v.ok:
                    outcome, message, text = "failure", f"{v.name} z3: {proof_mark(p)}", p.note
                seconds = r.seconds + p.seconds
            cases.append(
                (
                    r.cfg.label.replace(" ", "."),
                    f"{v.kind}:{v.name}",
                    seconds,
                    outcome,
                    message,
                    text,
                    rests_on(v),
                )
            )
    return cases


def _prove_cases(results: Sequence[ProveResult]) -> list[_Case]:
    cases = []
    for r in results:
        for p in r.proofs + ([r.in_range] if r.in_range is not None else []):
            if p.kind == "auxiliary":
                continue
            outcome = message = text = None
            if not p.applies:
                outcome, message = "skipped", "does not apply to this profile"
            elif not p.proved and p.kind in ("invariant", "typedness"):
                outcome, message = "failure", f"{p.name} {proof_mark(p)}"
                text = "\n".join(
                    trace_lines(p.trace) if p.trace else p.cti.lines() if p.cti else [p.note]
                )
            elif not p.proved:
                outcome = "system-out"
                text = "\n".join(trace_lines(p.trace) if p.trace else [p.note])
            cases.append(
                (
                    r.cfg.label.replace(" ", "."),
                    f"{p.kind}:{p.name}",
                    p.seconds,
                    outcome,
                    message,
                    text,
                    "",
                )
            )
    return cases


def _write(path: str, suite_name: str, cases: list[_Case]) -> None:
    suite = ET.Element("testsuite", name=suite_name)
    fails = skipped = 0
    for classname, name, seconds, outcome, message, text, basis in cases:
        case = ET.SubElement(
            suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}"
        )
        if basis:  # a witness's path or a liveness property's fairness
            props = ET.SubElement(case, "properties")
            key, _, value = basis.partition(" ")
            ET.SubElement(props, "property", name=key.rstrip(":"), value=value)
        if outcome is None:
            continue
        el = ET.SubElement(case, outcome, {"message": message} if message else {})
        if text is not None:
            el.text = text
        skipped += outcome == "skipped"
        fails += outcome == "failure"
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(fails))
    suite.set("skipped", str(skipped))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


# --- every model: the one result ------------------------------------------------------------


def cells_text(title: str, cells: Sequence[Cell]) -> str:
    """A model's section of ``mcp-inflight check``: per run, each property's verdict in the one
    vocabulary (``proofs/outcome.py``), then the trace or counterexample of each failure."""
    lines = [title]
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.model, c.design, c.run), []).append(c)
    width = max((len(c.prop) for c in cells), default=10) + 2
    for (model, design, run), group in groups.items():
        lines.append(f"  {model} {design} ({run})")
        for c in group:
            note = ""
            if c.kind is not None and c.kind.value == "hazard":
                note = "  (hazard: reported, never fails the check)"
            elif not c.passed:
                note = "  FAILED"
            basis = f"  ({c.rests_on})" if c.rests_on else ""
            lines.append(f"    {str(c.kind or 'run'):<10} {c.prop:<{width}} {c.word}{note}{basis}")
    for c in cells:
        if c.detail and (not c.passed or (c.kind is not None and c.kind.value == "hazard")):
            head = "hazard" if c.passed else "counterexample"
            lines.append(f"  {head}: {c.prop} on {c.model} {c.design} ({c.run})")
            if c.message:
                lines.append(f"    {c.message}")
            lines.extend("  " + ln for ln in c.detail)
    return "\n".join(lines)


def discipline_text(cells: Sequence[Cell]) -> str:
    """The ghost and obligation discipline of each run (``proofs/discipline.py``), one line."""
    bad = [c for c in cells if not c.passed]
    if not bad:
        return (
            f"Ghost and obligation discipline: the server's rules read no ghost and every "
            f"obligation reads what only the sender sees, on all {len(cells)} runs"
        )
    lines = ["Ghost and obligation discipline: FAILED"]
    for c in bad:
        lines.append(f"  {c.model} {c.design} ({c.run}): {c.message}")
    return "\n".join(lines)


def symmetry_text(cells: Sequence[Cell]) -> str:
    """The symmetry check of each run (``proofs/declared_symmetry.py``), one line when it holds."""
    bad = [c for c in cells if not c.passed]
    if not bad:
        return (
            "Symmetry: the rules and properties commute with renaming ids and instances, "
            f"checked on all {len(cells)} runs (the reduction and the bounded search use it)"
        )
    lines = ["Symmetry: FAILED (the reduction is refused for these runs)"]
    for c in bad:
        lines.append(f"  {c.design} ({c.run}): {c.message}")
    return "\n".join(lines)


def sensitivity_text(cells: Sequence[Cell]) -> str:
    """The sensitivity section: per property, the design or mutant that must break it and
    whether it still does (``proofs/sensitivity.py``)."""
    lines = [
        "Sensitivity (every invariant and liveness property must be broken by the designs or "
        "mutants its model names, at the default bounds; --no-sensitivity skips)"
    ]
    width = max((len(c.prop) for c in cells), default=10) + 2
    dw = max((len(c.design) for c in cells), default=10) + 2
    for c in cells:
        kind = str(c.kind or "-")
        flag = "" if c.passed else "  FAILED"
        lines.append(
            f"  {c.model:<8} {kind:<10} {c.prop:<{width}} {c.design:<{dw}} {c.word}{flag}"
            + (f"  {c.message}" if c.passed else "")
        )
    for c in cells:
        if not c.passed:
            lines.append(f"  {c.model} {c.prop}: {c.message}")
    return "\n".join(lines)


def write_junit_cells(path: str, cells: Sequence[Cell]) -> None:
    """``mcp-inflight check``'s JUnit file: one test case per model x design x run x property,
    a failure exactly where a cell fails the check (so the file agrees with the exit code); a
    property that does not apply is skipped, a hazard's trace is kept as system-out."""
    out: list[_Case] = []
    for c in cells:
        cls, name = c.case
        outcome = message = text = None
        if c.word.value == "not applicable":
            outcome, message = "skipped", "does not apply to this profile"
        elif not c.passed:
            outcome, message = "failure", f"{c.prop} {c.word} {c.rests_on}".rstrip()
            text = "\n".join(c.detail)
        elif c.detail:
            outcome, text = "system-out", "\n".join(c.detail)
        out.append((cls, name, c.seconds, outcome, message, text, c.rests_on))
    _write(path, "mcp-inflight check", out)
