"""Sequence diagrams of the declared models' counterexamples (the lease, input-required
rounds, resumable streams, tasks, subscriptions), as Mermaid.

Each model of the one declaration (``model/declare.py``) is explored by the one checker
(``proofs/declared.py``) at its default bounds, once per design: the safe design (every property
holds, so it draws nothing) and each mutant.  Every state or step property a design fails gets
one diagram of its shortest trace: ``diagrams/paths/<model>-<design>-<property>.mmd``, listed in
``diagrams/paths/index.md``.  A liveness failure is a lasso, drawn under the same name: the
shortest trace to a state from which a fair run can go on forever without the goal, then, in a
loop box, the closed walk it repeats (``Explored.loops``: through every state of the component
it stays in), or a note that it stays in that state for ever, every move it is owed disabled.

Lanes are the actors of the model's actions (``Act.actor``: the caller, the server, the rogue,
the clock; the client, the server, the network), in the order they first act.  Every step of the
trace is one note over its actor's lane, numbered like the trace, with the story of the move and
the variables it changed; the step on which the property breaks (a step property) or after which
it is broken (a state property) is in a red box that names the property.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp_inflight.model.declare import declared_models
from mcp_inflight.proofs.declared import explore

from .sequence import _mm

#: The models drawn: name -> module (``DESIGNS``, ``BOUNDS``, ``spec``).
MODELS = declared_models()
RED_RGB = "255, 214, 214"


@dataclass(frozen=True)
class Drawn:
    model: str
    design: str
    prop: str
    kind: str  # "always" | "step"
    doc: str
    trace: list[dict[str, Any]]
    actors: dict[str, str]  # action name -> actor

    @property
    def name(self) -> str:
        return f"{self.model}-{self.design}-{self.prop}"


@dataclass(frozen=True)
class Lasso:
    """A liveness property a design fails: the trace to the component a fair run stays in,
    and the loop it repeats there (empty: it stays in the trace's last state)."""

    model: str
    design: str
    prop: str
    doc: str
    trace: list[dict[str, Any]]
    loop: list[dict[str, Any]]
    actors: dict[str, str]
    fair: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.model}-{self.design}-{self.prop}"


@cache
def _explored() -> tuple[tuple[Drawn, ...], tuple[Lasso, ...]]:
    """Every failing property of every design of every model, with its shortest trace (explored
    once per process, and read from the checkers' cache while the models are unchanged)."""
    from mcp_inflight.proofs import cache as store

    key = store.source_key("paths-draw", tuple(MODELS))
    found = store.load("paths-draw", key)
    if isinstance(found, tuple) and len(found) == 2:
        return found
    drawn, lassos = [], []
    for model, mod in MODELS.items():
        for design in mod.DESIGNS:
            spec = mod.spec(design)
            res = explore(spec, engine="fastest")  # native where a compiler is (the same traces)
            actors = {a.name: a.actor for a in spec.acts}
            for p in spec.props:
                if res.verdicts.get(p.name) != "fails":
                    continue
                if p.kind in ("always", "step"):
                    trace = res.traces[p.name]
                    drawn.append(Drawn(model, design, p.name, p.kind, p.doc, trace, actors))
                elif p.kind == "liveness":
                    lassos.append(
                        Lasso(
                            model,
                            design,
                            p.name,
                            p.doc,
                            res.traces[p.name],
                            res.loops[p.name],
                            actors,
                            p.fair,
                        )
                    )
    out = (tuple(drawn), tuple(lassos))
    store.store("paths-draw", key, out)
    return out


def counterexamples() -> tuple[Drawn, ...]:
    """Every failing state or step property of every design of every model, with its shortest
    trace."""
    return _explored()[0]


def lassos() -> tuple[Lasso, ...]:
    """Every failing liveness property of every design of every model, with its lasso."""
    return _explored()[1]


def _text(n: int, st: dict[str, Any]) -> str:
    lines = [f"{n}. {st['story']}"]
    lines += [f"{k}: {a} → {b}" for k, (a, b) in st["changes"].items()]
    return "<br/>".join(_mm(x) for x in lines)


def _lanes(actors: dict[str, str], *steps: list[dict[str, Any]]) -> list[str]:
    """The actors of ``steps``, in the order they first act."""
    lanes: list[str] = []
    for st in (st for part in steps for st in part):
        if actors[st["action"]] not in lanes:
            lanes.append(actors[st["action"]])
    return lanes or sorted(set(actors.values()))[:1]


def _span(lanes: list[str]) -> str:
    return lanes[0] if len(lanes) == 1 else f"{lanes[0]},{lanes[-1]}"


def mermaid(d: Drawn) -> str:
    lanes = _lanes(d.actors, d.trace)
    where = "on this step" if d.kind == "step" else "in the state after this step"
    out = [
        "---",
        f"title: {d.prop} fails on {d.model} {d.design}",
        "---",
        "sequenceDiagram",
    ]
    out += [f"    participant {lane}" for lane in lanes]
    last = len(d.trace)
    for n, st in enumerate(d.trace, 1):
        note = f"    Note over {d.actors[st['action']]}: {_text(n, st)}"
        if n == last:
            out += [f"    rect rgb({RED_RGB})", note]
            out.append(f"    Note over {_span(lanes)}: {_mm(d.prop)} breaks {where}")
            out.append("    end")
        else:
            out.append(note)
    return "\n".join(out) + "\n"


def lasso_mermaid(x: Lasso) -> str:
    """The lasso as a sequence diagram: the trace, then the loop in a loop box (red)."""
    lanes = _lanes(x.actors, x.trace, x.loop)
    out = ["---", f"title: {x.prop} fails on {x.model} {x.design}", "---", "sequenceDiagram"]
    out += [f"    participant {lane}" for lane in lanes]
    for n, st in enumerate(x.trace, 1):
        out.append(f"    Note over {x.actors[st['action']]}: {_text(n, st)}")
    owed = ", ".join(x.fair) or "none"
    out.append(f"    rect rgb({RED_RGB})")
    if x.loop:
        out.append(f"    loop for ever, {_mm(x.prop)}'s goal never holds (owed moves: {owed})")
        for n, st in enumerate(x.loop, len(x.trace) + 1):
            out.append(f"    Note over {x.actors[st['action']]}: {_text(n, st)}")
        out.append("    end")
    else:
        out.append(
            f"    Note over {_span(lanes)}: stays here for ever: no owed move enabled "
            f"({owed}), {_mm(x.prop)}'s goal never holds"
        )
    out.append("    end")
    return "\n".join(out) + "\n"


def index(drawn: tuple[Drawn, ...], lasso: tuple[Lasso, ...] = ()) -> str:
    safe = ", ".join(f"`{next(iter(mod.DESIGNS))}`" for mod in MODELS.values())
    sources = ", ".join(f"`model/{name}.py`" for name in MODELS)
    out = [
        "# Counterexamples of the declared models",
        "",
        f"Generated from {sources} by `mcp-inflight diagrams`: the shortest trace of every state",
        "or step property each mutant fails, and the lasso of every liveness property (the",
        "trace, then the loop a fair run repeats for ever), at the model's default bounds (the",
        f"safe designs, {safe}, fail none). `mcp-inflight check --model NAME --design DESIGN`",
        "prints the traces as text.",
        "",
    ]
    for d in drawn:
        out += [
            f"## {d.prop} fails on {d.model} `{d.design}`",
            "",
            d.doc,
            "",
            f"[Mermaid]({d.name}.mmd), {len(d.trace)} steps",
            "",
        ]
    for x in lasso:
        out += [
            f"## {x.prop} fails on {x.model} `{x.design}` (liveness: a lasso)",
            "",
            x.doc,
            "",
            f"[Mermaid]({x.name}.mmd), {len(x.trace)} steps, then a loop of {len(x.loop)}"
            + (" (it stays in that state)" if not x.loop else ""),
            "",
        ]
    return "\n".join(out)


def files() -> dict[str, str]:
    """``paths/<name>.mmd`` for every counterexample and every lasso, and ``paths/index.md``."""
    drawn = counterexamples()
    out = {f"paths/{d.name}.mmd": mermaid(d) for d in drawn}
    out |= {f"paths/{x.name}.mmd": lasso_mermaid(x) for x in lassos()}
    out["paths/index.md"] = index(drawn, lassos())
    return out
