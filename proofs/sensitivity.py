"""Sensitivity: every property can fail, and still fails where it must.

A property that holds on the safe design says something only if some design *breaks* it: a
property weakened by mistake (``And`` turned into ``Or``, a typo in the action name a step
property judges, an antecedent that cannot hold) keeps holding on the safe design and is noticed
only when the design that used to break it no longer does.  Each model declares, per invariant,
step invariant and liveness property, the designs or mutants that must break it (``BROKEN_BY``
in ``model/properties.py``, ``model/lease.py``, ``model/rounds.py``, ``model/resume.py``);
:func:`sensitivity` explores each of them at the model's default bounds (the session model at
``check``'s default bound, 2 ids x 2 instances, on the profile the entry names) and returns one
cell per property and breaker (``proofs/outcome.py``):

* ``broken (as it must be)``: the breaker fails the property (passes);
* ``not broken``: it no longer does: the property got weaker, or the breaker was repaired
  (fails the check);
* ``untested``: no breaker is declared (fails the check): nothing shows the property can fail.

The runs go through the same explorer as the check itself; the results are kept in the
checkers' cache, keyed by the source of the model and the checkers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp_inflight.model.kinds import Kind, kind_of

from .outcome import Cell, Word

RUN = "sensitivity"


def cells_from(
    model: str,
    props: Mapping[str, Kind],
    declared: Mapping[str, tuple[str, ...]],
    broken: Callable[[str], Mapping[str, str]],
) -> list[Cell]:
    """The cells of ``model``: ``props`` (name -> kind) are the properties that need a breaker,
    ``declared`` the model's ``BROKEN_BY``, ``broken(entry)`` the properties the breaker
    ``entry`` fails, each with the run where it does."""
    out: list[Cell] = []
    runs: dict[str, Mapping[str, str]] = {}
    unknown = sorted(set(declared) - set(props))
    for name in unknown:
        out.append(
            Cell(
                model,
                "-",
                RUN,
                name,
                None,
                Word.UNTESTED,
                False,
                f"BROKEN_BY names {name!r}, which is not a property that needs a breaker",
            )
        )
    for name, kind in props.items():
        entries = declared.get(name, ())
        if not entries:
            out.append(
                Cell(
                    model,
                    "-",
                    RUN,
                    name,
                    kind,
                    Word.UNTESTED,
                    False,
                    f"{name}: no design or mutant is declared to break it, so nothing shows "
                    "it can fail (add it to the model's BROKEN_BY)",
                )
            )
        for entry in entries:
            if entry not in runs:
                runs[entry] = broken(entry)
            where = runs[entry].get(name)
            design = entry.split("@", 1)[0]
            if where is not None:
                out.append(Cell(model, design, RUN, name, kind, Word.BROKEN, True, where))
            else:
                out.append(
                    Cell(
                        model,
                        design,
                        RUN,
                        name,
                        kind,
                        Word.NOT_BROKEN,
                        False,
                        f"{name} holds on {entry}, which must break it: the property got "
                        "weaker (or the mutant no longer has its defect)",
                    )
                )
    return out


# --- the models ---------------------------------------------------------------------------------


def session(ids: int = 2, requests: int = 2) -> list[Cell]:
    from mcp_inflight.model.config import DESIGNS as SAFE
    from mcp_inflight.model.config import Config, client_for, liveness_mutants, mutants, profiles
    from mcp_inflight.model.eventually import NAMES
    from mcp_inflight.model.properties import BROKEN_BY, INVARIANTS

    from .explorer import search_sessions

    designs = {**SAFE, **mutants(), **liveness_mutants()}
    props = {p.name: kind_of(p.kind, p.scope) for p in INVARIANTS} | {
        n: Kind.LIVENESS for n in NAMES
    }
    live = {e for n in NAMES for e in BROKEN_BY.get(n, ())}
    entries = sorted({e for es in BROKEN_BY.values() for e in es})

    def cfgs(entry: str) -> list[Any]:
        design, _, where = entry.partition("@")
        rev, _, tr = where.partition("/")
        return [
            Config(designs[design], r, t, ids, requests, client_for("reusing", r))
            for r, t in profiles(rev or "all", tr or "all")
        ]

    found: dict[str, dict[str, str]] = {}
    for with_graph in (False, True):
        batch = [e for e in entries if (e in live) == with_graph and e.split("@")[0] in designs]
        todo = [(e, c) for e in batch for c in cfgs(e)]
        if not todo:
            continue
        results = search_sessions(
            [c for _, c in todo],
            symmetry=True,
            progress=False,
            engine="auto",  # the one explorer: native where a C compiler is
            liveness=with_graph,
        )
        for (e, _), r in zip(todo, results, strict=True):
            fails = found.setdefault(e, {})
            for v in r.verdicts:
                if v.applies and not v.ok and v.kind in ("invariant", "liveness"):
                    steps = len(v.trace or ())
                    fails.setdefault(v.name, f"fails on {r.cfg.label} ({steps} steps)")
    return cells_from("session", props, BROKEN_BY, lambda e: found.get(e, {}))


def lease() -> list[Cell]:
    return small("lease")


def small(name: str) -> list[Cell]:
    import importlib

    from .explorer import explore

    m = importlib.import_module(f"mcp_inflight.model.{name}")
    safe = m.spec(next(iter(m.DESIGNS)))
    props = {
        p.name: kind_of(p.kind) for p in safe.props if p.kind in ("always", "step", "liveness")
    }

    def broken(design: str) -> dict[str, str]:
        if design not in m.DESIGNS:
            return {}
        # only whether it breaks what it must is asked: the search stops once it has
        until = [p for p, es in m.BROKEN_BY.items() if design in es and p in props]
        ex = explore(m.spec(design), until=until, engine="fastest")
        return {
            k: f"fails on {ex.spec.label()} ({len(ex.traces.get(k, ()))} steps)"
            for k, v in ex.verdicts.items()
            if v == "fails"
        }

    return cells_from(name, props, m.BROKEN_BY, broken)


def sensitivity(models: Iterable[str], cache: str | None = "use") -> list[Cell]:
    """The sensitivity cells of ``models`` (``session``, ``lease``, ``rounds``, ``resume``),
    read from the checkers' cache when the model and the checkers are unchanged."""
    from . import cache as store

    out: list[Cell] = []
    for model in models:
        key = store.source_key("sensitivity", model)
        found = store.load("sensitivity", key) if cache == "use" else None
        if not (isinstance(found, list) and all(isinstance(c, Cell) for c in found)):
            found = (
                session() if model == "session" else lease() if model == "lease" else small(model)
            )
            if cache is not None:
                store.store("sensitivity", key, found)
        out += found
    return out
