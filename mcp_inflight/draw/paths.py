"""Sequence diagrams of the declared models' counterexamples (the lease, input-required
rounds, resumable streams, tasks, subscriptions), as Mermaid.

Each model of the one declaration (``model/declare.py``) is explored by the one checker
(``proofs/declared.py``) at its default bounds, once per design: the safe design (every property
holds, so it draws nothing) and each mutant.  Every state or step property a design fails gets
one diagram of its shortest trace: ``diagrams/paths/<model>-<design>-<property>.mmd``, listed in
``diagrams/paths/index.md``.  A liveness failure is a lasso, not a path: the index names it and
``mcp-inflight check --model NAME --design DESIGN`` prints it.

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
from mcp_inflight.proofs.declared import explore_declared

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
    """A liveness property a design fails: named in the index, not drawn."""

    model: str
    design: str
    prop: str


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
            res = explore_declared(spec)  # native where a compiler is (the same traces)
            actors = {a.name: a.actor for a in spec.acts}
            for p in spec.props:
                if res.verdicts.get(p.name) != "fails":
                    continue
                if p.kind in ("always", "step"):
                    trace = res.traces[p.name]
                    drawn.append(Drawn(model, design, p.name, p.kind, p.doc, trace, actors))
                elif p.kind == "liveness":
                    lassos.append(Lasso(model, design, p.name))
    out = (tuple(drawn), tuple(lassos))
    store.store("paths-draw", key, out)
    return out


def counterexamples() -> tuple[Drawn, ...]:
    """Every failing state or step property of every design of every model, with its shortest
    trace."""
    return _explored()[0]


def lassos() -> tuple[Lasso, ...]:
    """Every failing liveness property of every design of every model (not drawn)."""
    return _explored()[1]


def _text(n: int, st: dict[str, Any]) -> str:
    lines = [f"{n}. {st['story']}"]
    lines += [f"{k}: {a} → {b}" for k, (a, b) in st["changes"].items()]
    return "<br/>".join(_mm(x) for x in lines)


def mermaid(d: Drawn) -> str:
    lanes: list[str] = []
    for st in d.trace:
        actor = d.actors[st["action"]]
        if actor not in lanes:
            lanes.append(actor)
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
            span = lanes[0] if len(lanes) == 1 else f"{lanes[0]},{lanes[-1]}"
            out.append(f"    Note over {span}: {_mm(d.prop)} breaks {where}")
            out.append("    end")
        else:
            out.append(note)
    return "\n".join(out) + "\n"


def index(drawn: tuple[Drawn, ...], lasso: tuple[Lasso, ...] = ()) -> str:
    safe = ", ".join(f"`{next(iter(mod.DESIGNS))}`" for mod in MODELS.values())
    sources = ", ".join(f"`model/{name}.py`" for name in MODELS)
    out = [
        "# Counterexamples of the declared models",
        "",
        f"Generated from {sources} by `mcp-inflight diagrams`: the shortest trace of every state",
        "or step property each mutant fails, at the model's default bounds (the safe designs,",
        f"{safe}, fail none). `mcp-inflight check --model NAME --design DESIGN` prints the same",
        "traces as text.",
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
    if lasso:
        out += [
            "## Liveness failures (lassos, not drawn)",
            "",
            *[f"- {x.prop} fails on {x.model} `{x.design}`" for x in lasso],
            "",
        ]
    return "\n".join(out)


def files() -> dict[str, str]:
    """``paths/<name>.mmd`` for every counterexample, and ``paths/index.md``."""
    drawn = counterexamples()
    out = {f"paths/{d.name}.mmd": mermaid(d) for d in drawn}
    out["paths/index.md"] = index(drawn, lassos())
    return out
