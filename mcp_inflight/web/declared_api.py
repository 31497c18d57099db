"""The models page's JSON: the declared models (``model/declare.py``) seen through the one
checker (``proofs/declared.py``).

The session page reads its model through ``model_api``; this module is the same window on the
declared models (lease, rounds, resume, tasks, subscriptions): it lists them with their designs
(the safe design first, then its mutants), bounds and hazards; it replays a path of moves from
the initial state by the checker's own concrete step (``proofs/stepping.py``) and lists the
moves enabled at any position, each with its successor and output; and it runs the explorer
(``proofs/explorer.py``'s :func:`explore`) for the verdicts, each failing property's shortest
trace as a path the page can walk, and the coverage of the actions.  No rule is stated here.

A path is a list of moves, each written as a token ``action.A.B`` (the action's name, then its
arguments as integers in the order the action declares them; ``action`` alone when it has
none), joined by ``-`` in a URL, so a link replays with nothing but the model.

Errors a query can make (an unknown model, design or bound, a bound out of range, a path that
does not replay) raise :class:`~mcp_inflight.web.errors.BadRequest`: the server answers 400.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from mcp_inflight.model.declare import DECLARED_MODELS, Move, Spec, changes, describe
from mcp_inflight.proofs.declared import explore
from mcp_inflight.proofs.stepping import take
from mcp_inflight.web.errors import BadRequest, query_int

#: the declared models, in the order the page lists them: name -> module
MODELS = DECLARED_MODELS

#: the largest value a bound may take in a query: stepping is cheap at any bound, and this
#: keeps a mistyped URL from building a state of thousands of slots
MAX_BOUND = 8
#: the longest path a query may replay
MAX_PATH = 400
#: the exploration behind the verdicts stops here (the largest default-bound run, tasks'
#: cancel-reaches-task, has about 52,000 states); a run cut short says so
MAX_STATES = 1_000_000

#: a configuration: model, design, bounds (as :func:`config_of` gives it)
Job = tuple[str, str, tuple[tuple[str, int], ...]]

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[0-9]{1,3})*\Z")


def _module(name: str) -> Any:
    if name not in MODELS:
        raise BadRequest(f"no model {name!r} (one of {', '.join(MODELS)})")
    return importlib.import_module(MODELS[name])


def _doc(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, on one line."""
    text = (obj.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(text.split())


def _bound_rows(mod: Any) -> list[dict[str, Any]]:
    return [
        {"name": k, "default": int(v[0]), "help": str(v[1]), "max": MAX_BOUND}
        for k, v in mod.BOUNDS.items()
    ]


def models() -> list[dict[str, Any]]:
    """Every declared model: its designs (``safe`` for the first, the others mutants), its
    bounds (default, help, largest a query may ask) and its hazards (each with the bound that
    enables it)."""
    out = []
    for name in MODELS:
        mod = _module(name)
        designs = list(mod.DESIGNS)
        out.append(
            {
                "name": name,
                "doc": _doc(mod),
                "designs": [
                    {"name": d, "doc": mod.DESIGN_DOCS.get(d, ""), "safe": k == 0}
                    for k, d in enumerate(designs)
                ],
                "bounds": _bound_rows(mod),
                "hazards": [
                    {"name": h.name, "doc": h.doc, "remedy": h.remedy, "bound": h.bound}
                    for h in mod.HAZARDS
                ],
            }
        )
    return out


def _bound_names(mod: Any) -> list[str]:
    return list(mod.BOUNDS) + [h.bound for h in mod.HAZARDS]


def config_of(q: Mapping[str, str]) -> Job:
    """``(model, design, bounds)`` that a query names: the model's safe design and default
    bounds where it names none; every bound is checked (a hazard's bound is 0 or 1, and named
    only when 1), so that one configuration has one key, however the query spells it."""
    name = q.get("model") or next(iter(MODELS))
    mod = _module(name)
    design = q.get("design") or next(iter(mod.DESIGNS))
    if design not in mod.DESIGNS:
        raise BadRequest(f"{name} has no design {design!r} (one of {', '.join(mod.DESIGNS)})")
    hazard_bounds = {h.bound for h in mod.HAZARDS}
    bounds = []
    for b in _bound_names(mod):
        raw = q.get(b)
        if raw is None or raw == "":
            if b not in hazard_bounds:  # the default, named: one key per configuration
                bounds.append((b, int(mod.BOUNDS[b][0])))
            continue
        lo, hi = (0, 1) if b in hazard_bounds else (1, MAX_BOUND)
        n = query_int(q, b, 0, lo, hi)
        if n or b not in hazard_bounds:
            bounds.append((b, n))
    return name, design, tuple(bounds)


@lru_cache(maxsize=64)
def spec(name: str, design: str, bounds: tuple[tuple[str, int], ...]) -> Spec:
    """The model's :class:`Spec` at ``design`` and ``bounds`` (a bound not named: its
    default)."""
    try:
        sp: Spec = _module(name).spec(design, **dict(bounds))
    except (ValueError, KeyError) as e:
        raise BadRequest(f"{name} {design}: {e}") from None
    return sp


# --- moves and states ---------------------------------------------------------------------


def token(m: Move) -> str:
    """The move as a path token: ``action.A.B``."""
    return ".".join([m.name, *(str(v) for _, v in m.args)])


def _moves(sp: Spec) -> dict[str, Move]:
    return {token(m): m for m in sp.moves()}


@lru_cache(maxsize=64)
def _move_table(name: str, design: str, bounds: tuple[tuple[str, int], ...]) -> dict[str, Move]:
    return _moves(spec(name, design, bounds))


def trace_tokens(sp: Spec, steps: list[dict[str, Any]]) -> list[str]:
    """The path of a rendered trace (the explorer's steps: ``action`` and ``args``)."""
    out = []
    for st in steps:
        a = sp.act(st["action"])
        out.append(".".join([a.name, *(str(st["args"][p]) for p, _ in a.params)]))
    return out


def state_fields(sp: Spec, s: Any, prev: Any | None = None) -> list[dict[str, Any]]:
    """Every slot of ``s``: its variable, role (``ghost`` for what only the properties read),
    value, and whether the step from ``prev`` changed it."""
    shown = describe(sp, s)
    changed = changes(sp, prev, s) if prev is not None else {}
    rows = []
    for v in sp.vars:
        slots = [v.name] if v.keys is None else [v.slot(k) for k in range(v.keys)]
        for slot in slots:
            rows.append(
                {
                    "name": slot,
                    "var": v.name,
                    "role": v.role,
                    "ghost": v.ghost,
                    "value": shown[slot],
                    "changed": slot in changed,
                }
            )
    return rows


def _plain(x: Any) -> Any:
    """An output value as JSON (tuples as lists)."""
    if isinstance(x, tuple | list):
        return [_plain(y) for y in x]
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return x
    return str(x)


def _step(sp: Spec, m: Move, pre: Any, post: Any, out: Mapping[str, Any]) -> dict[str, Any]:
    a = m.act
    return {
        "token": token(m),
        "action": m.name,
        "args": m.kw,
        "side": a.side,
        "actor": a.actor,
        "story": a.story(m.kw) if a.tell is None else a.tell(m.kw, pre, post, out),
        "changes": changes(sp, pre, post),
        "output": {k: _plain(v) for k, v in out.items()},
        "breaks": _breaks(sp, m, pre, post, out),
    }


def _breaks(sp: Spec, m: Move, pre: Any, post: Any, out: Mapping[str, Any]) -> list[str]:
    """The invariants (state and step) that hold before this move and fail after it or on it."""
    b = sp.logic()
    bad = []
    for p in sp.props:
        if p.kind == "always" and bool(p.fn(b, pre)) and not bool(p.fn(b, post)):
            bad.append(p.name)
        elif p.kind in ("step", "hazard") and not bool(p.on_step(b, pre, post, m, out)):
            bad.append(p.name)
    return bad


def replay(sp: Spec, table: Mapping[str, Move], tokens: list[str]) -> list[dict[str, Any]]:
    """Each step of the path ``tokens`` from the initial state: the move, ``pre``, ``post`` and
    ``out``; a :class:`BadRequest` naming the first step that is no move or not enabled."""
    if len(tokens) > MAX_PATH:
        raise BadRequest(f"a path may have at most {MAX_PATH} steps, not {len(tokens)}")
    b = sp.logic()
    s = sp.initial()
    steps = []
    for n, t in enumerate(tokens, 1):
        m = table.get(t) if _TOKEN.match(t) else None
        if m is None:
            raise BadRequest(f"step {n}: {t!r} is no move of {sp.model}", n)
        fired = take(sp, s, m, b)
        if fired is None:
            raise BadRequest(f"step {n}: {t} is not enabled there", n)
        post, out = fired
        steps.append({"move": m, "pre": s, "post": post, "out": out})
        s = post
    return steps


def judge(sp: Spec, s: Any, last: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every property at state ``s`` (reached by the step ``last``, if any): an invariant
    ``holds``/``fails`` here; a step property on the step that led here (``no step`` at the
    start); a witness ``here``/``not here``; a liveness goal ``goal holds``/``goal not yet``."""
    b = sp.logic()
    rows = []
    for p in sp.props:
        if p.kind in ("always", "sometimes"):
            ok = bool(p.fn(b, s))
            status = (
                ("holds" if ok else "fails")
                if p.kind == "always"
                else ("here" if ok else "not here")
            )
        elif p.kind == "liveness":
            status = "goal holds" if bool(p.fn(b, s)) else "goal not yet"
        elif last is None:
            status = "no step"
        else:
            ok = bool(p.on_step(b, last["pre"], last["post"], last["move"], last["out"]))
            if p.kind == "happens":
                status = "here" if ok else "not here"
            else:
                status = "holds" if ok else "fails"
        rows.append({"name": p.name, "kind": p.kind, "doc": p.doc, "status": status})
    return rows


def describe_config(job: Job) -> dict[str, Any]:
    """The configuration ``(model, design, bounds)`` as the page shows it: every bound (a
    hazard's bound only when enabled) and the model's own label of the run."""
    sp = spec(*job)
    hazards = [b for b, _ in job[2] if b not in sp.bounds]
    return {
        "model": sp.model,
        "design": sp.design,
        "bounds": {**sp.bounds, **dict(job[2])},
        "label": sp.label() + "".join(f", {b} enabled" for b in hazards),
    }


def view(q: Mapping[str, str]) -> dict[str, Any]:
    """The page at position ``at`` (default: the end) of ``path`` on the query's model, design
    and bounds: the whole path, the state there (every slot, ghosts marked, the last step's
    changes marked), the moves enabled there (each with its successor and output) and every
    property's status there."""
    cfg = config_of(q)
    sp = spec(*cfg)
    table = _move_table(*cfg)
    tokens = [t for t in (q.get("path") or "").split("-") if t]
    steps = replay(sp, table, tokens)
    at = query_int(q, "at", len(steps), 0, len(steps))
    here = steps[:at]
    last = here[-1] if here else None
    s = last["post"] if last else sp.initial()
    b = sp.logic()
    enabled = []
    nxt = token(steps[at]["move"]) if at < len(steps) else None
    for m in table.values():
        fired = take(sp, s, m, b)
        if fired is None:
            continue
        post, out = fired
        row = _step(sp, m, s, post, out)
        row["next"] = row["token"] == nxt
        row["post"] = describe(sp, post)
        enabled.append(row)
    return {
        "config": describe_config(cfg),
        "path": [_step(sp, st["move"], st["pre"], st["post"], st["out"]) for st in steps],
        "at": at,
        "story": _step(sp, last["move"], last["pre"], last["post"], last["out"])["story"]
        if last
        else "the initial state",
        "state": state_fields(sp, s, last["pre"] if last else None),
        "enabled": enabled,
        "properties": judge(sp, s, last),
    }


# --- exploration --------------------------------------------------------------------------


def explored(job: Job, max_states: int | None) -> dict[str, Any]:
    """The explorer's run on ``job`` (model, design, bounds), as the page lists it: the
    verdicts, each failing property's (and reached witness's) shortest trace with its path of
    tokens (a liveness failure's: the trace, then its loop once round, ``loop_from`` the step
    the loop starts after), the coverage and dead actions, the first deadlock (if any) and
    whether the run was complete (``max_states`` cuts it)."""
    sp = spec(*job)
    res = explore(sp, max_states=max_states or MAX_STATES)
    out = res.to_json()
    for p in out["properties"].values():
        if p["trace"] is not None:
            p["path"] = trace_tokens(sp, p["trace"] + p.get("loop", []))
            if "loop" in p:
                p["loop_from"] = len(p["trace"])
    if out["deadlock_trace"] is not None:
        out["deadlock_path"] = trace_tokens(sp, out["deadlock_trace"])
    out["broken"] = res.broken()
    out["config"] = describe_config(job)
    return out
