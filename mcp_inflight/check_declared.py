"""The declared models' part of ``mcp-inflight check``: lease, rounds, resume, tasks and
subscriptions (``model/declare.py``'s ``DECLARED_MODELS``), each one the same way.

Every model module names its ``DESIGNS`` (the safe design first), its ``BOUNDS``,
``spec(design, **bounds)`` and its ``HAZARDS`` (traces no design excludes, each explored in a
run of its own beside the safe design and reported, never failing the check).  A run of one
model at one design is checked by the one checker (``proofs/declared.py``: the explorer, then
the prover) and kept as :class:`Run`: plain data (its cells in the one result vocabulary of
``proofs/outcome.py`` and its JSON), so that it can be kept in the checkers' cache.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.declare import DECLARED_MODELS


def module(model: str) -> Any:
    """The model module of ``model`` (a name of ``DECLARED_MODELS``)."""
    return importlib.import_module(DECLARED_MODELS[model])


def designs_of(model: str) -> list[str]:
    """The designs of ``model``, its safe design first."""
    return list(module(model).DESIGNS)


def bounds_of(model: str, bounds: dict[str, int] | None) -> dict[str, int]:
    """The part of ``bounds`` that names bounds of ``model`` (its ``BOUNDS``)."""
    own = module(model).BOUNDS
    return {k: v for k, v in (bounds or {}).items() if k in own}


def title_of(model: str) -> str:
    """The first line of ``model``'s module text: what it models, in one line."""
    doc = (module(model).__doc__ or model).strip().splitlines()[0]
    return doc.replace("``", "").rstrip(".")


@dataclass
class Run:
    """One declared model at one design and bounds, as ``check`` reports it."""

    model: str
    design: str
    label: str  # the run's bounds in words
    states: int
    proved: bool  # the prover ran
    unbounded: bool  # its proof holds for any size of the sorts the model declares unbounded
    cells: list[Any]  # proofs.outcome.Cell, the hazards' among them
    json: dict[str, Any]

    @property
    def ok(self) -> bool:
        from mcp_inflight.proofs.outcome import ok

        return ok(self.cells)


def run(model: str, design: str, prove: bool = True, bounds: dict[str, int] | None = None) -> Run:
    """``model`` at ``design`` and ``bounds`` explored and (unless ``prove`` is false) proved;
    at the safe design, each of the model's hazards explored in its own run too."""
    from mcp_inflight.proofs.declared import check, hazard

    m = module(model)
    mine = bounds_of(model, bounds)
    checked = check(m.spec(design, **mine), with_proof=prove)
    hazards = []
    if design == designs_of(model)[0]:
        hazards = [hazard(h, m.spec(design, **{**mine, h.bound: 1})) for h in m.HAZARDS]
    return as_run(checked, hazards)


def as_run(checked: Any, hazards: Sequence[Any] = ()) -> Run:
    """A checked run (``proofs.declared.Checked``) and its hazards' runs (``HazardRun``) as
    :class:`Run`."""
    from mcp_inflight.proofs.outcome import declared_cells

    ex, pr = checked.explored, checked.proved
    sp = ex.spec
    return Run(
        sp.model,
        sp.design,
        sp.bounds_label(),
        ex.states,
        pr is not None,
        pr is not None and pr.unbounded,
        declared_cells(ex, pr, hazards),
        {
            "model": sp.model,
            "design": sp.design,
            "bounds": dict(sp.bounds),
            **checked.to_json(),
            "hazards": [h.to_json() for h in hazards],
        },
    )


def section(
    cache: str | None = "use",
    plan: dict[str, list[str]] | None = None,
    prove: bool = True,
    bounds: dict[str, int] | None = None,
) -> list[Run]:
    """``check``'s runs of the declared models and designs of ``plan`` (default: each model's
    safe design) at ``bounds`` (each model takes the names of its ``BOUNDS``; default: its
    defaults).  Each run is read from the checkers' cache when the model and the checkers are
    unchanged (``cache="use"``; :func:`key`), computed afresh and stored with ``"refresh"``,
    neither read nor stored with ``None``.  A run with a verdict the solver could not decide is
    never stored."""
    from mcp_inflight.proofs import cache as store
    from mcp_inflight.proofs.outcome import Word

    plan = plan or {m: designs_of(m)[:1] for m in DECLARED_MODELS}
    out = []
    for model, designs in plan.items():
        mine = bounds_of(model, bounds)
        for d in designs:
            k = key(model, d, prove, mine)
            found = store.load("declared", k) if cache == "use" else None
            if not isinstance(found, Run):
                found = run(model, d, prove, mine)
                if cache is not None and all(c.word is not Word.UNKNOWN for c in found.cells):
                    store.store("declared", k, found)
            out.append(found)
    return out


def key(model: str, design: str, prove: bool, bounds: dict[str, int] | None = None) -> str:
    """The cache key of one model and design of :func:`section` at ``bounds``."""
    from mcp_inflight.proofs import cache as store

    return store.source_key("declared-check", model, design, prove, bounds or {})


def text(runs: Sequence[Run]) -> str:
    """The runs, model by model: a title saying what the model is, its bounds, its states and
    how far its proofs reach; each run's verdicts and failures' traces; and, where more than
    one design of a model ran, every design's verdicts side by side."""
    from mcp_inflight.report import cells_text

    by_model: dict[str, list[Run]] = {}
    for r in runs:
        by_model.setdefault(r.model, []).append(r)
    parts = []
    for model, mine in by_model.items():
        first = mine[0]
        if not first.proved:
            how = "explored only"
        elif first.unbounded:
            how = "invariants proved for any size"
        else:
            how = "invariants proved at its bounds only ('proved at bounds')"
        title = (
            f"{title_of(model)} ({model}: {', '.join(r.design for r in mine)}; "
            f"{first.label} explored: {first.states:,} states; {how}):"
        )
        block = cells_text(title, [c for r in mine for c in r.cells])
        if len(mine) > 1:
            block += "\n" + "\n".join(matrix(mine))
        parts.append(block)
    return "\n\n".join(parts)


def matrix(runs: Sequence[Run]) -> list[str]:
    """One model's designs side by side: a row per property, a column per design."""
    designs = [r.design for r in runs]
    words: dict[str, dict[str, str]] = {}
    for r in runs:
        for c in r.cells:
            if c.kind is not None and c.kind.value != "hazard":
                words.setdefault(c.prop, {})[r.design] = str(c.word)
    width = max((len(p) for p in words), default=8) + 2
    cols = [max(len(d), len("proved at bounds")) + 2 for d in designs]
    head = (
        "  "
        + "property".ljust(width)
        + "".join(d.ljust(w) for d, w in zip(designs, cols, strict=True))
    )
    lines = ["  the designs side by side:", head.rstrip()]
    for prop, row in words.items():
        cells = "".join(row.get(d, "-").ljust(w) for d, w in zip(designs, cols, strict=True))
        lines.append(("  " + prop.ljust(width) + cells).rstrip())
    return lines
