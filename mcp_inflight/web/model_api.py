"""The explorer page's one window on the model, the explorer, the drawing code and the traces.

Every other module of ``mcp_inflight.web`` reads the model through this one: the page never
defines a rule of its own.  A step is computed by the model's own action exactly as the
model's one step function computes it (``model/step.py``): the action's guard on the
pre-state, its output, its effect applied with ``apply_writes``, then ``canonical_clock``.
Properties are the model's, judged by the model's own functions (a state property on the
state, a step property on the transition that led to it).  Traces come from the one explorer (``explore(cfg)``); the
sequence diagram's lanes and arrows from ``mcp_inflight.draw.sequence.arrows``.

A path is a list of *moves*, each an action name and its arguments, written as a token
``action.A`` or ``action.A.1`` (instance name, then id name, as the explorer names them), so a
path in a URL needs nothing from the server but the model to be replayed.

"Which part fails" is found without reading the property's text, by :mod:`.explain` (the
property evaluated once more, recording the failing quantifier instances and the field reads).

A recorded runtime trace (``mcp-inflight record``) opens in the same view as a path of moves:
it is read by the trace package's reader, mapped onto the model's moves and checked on
``atomic`` exactly as ``mcp-inflight replay`` does (``model/observe.py``, and the replay's own
report), and each run that explains it (``atomic``'s, up to the first step it cannot explain,
and those of the designs that explain all of it) becomes a path of tokens (:func:`recorded`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from mcp_inflight.draw.sequence import arrows as _draw_arrows
from mcp_inflight.model import step as _step
from mcp_inflight.model.config import DESIGNS, Config, Design, mutants, profiles
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import Concrete
from mcp_inflight.model.observe import REVISION as _OBSERVED_REVISION
from mcp_inflight.model.observe import TRANSPORT as _OBSERVED_TRANSPORT
from mcp_inflight.model.observe import abstract as _abstract
from mcp_inflight.model.observe_check import Verdict as _Replayed
from mcp_inflight.model.observe_check import check as _check
from mcp_inflight.model.observe_check import explains as _explains
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.session_state import FIELDS, State
from mcp_inflight.model.trace import (
    changes,
    id_name,
    inst_name,
    render_value,
    story,
    trace_json,
    trace_to_json,
)
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.trace.format import TraceError, parse
from mcp_inflight.trace.replay import report as _replay_report
from mcp_inflight.web.explain import explain

# --- configurations -----------------------------------------------------------------------


@lru_cache(maxsize=1)
def all_designs() -> dict[str, Design]:
    """The three designs, then the mutants of ``atomic`` (one safeguard removed each)."""
    return {**DESIGNS, **mutants()}


def revisions() -> list[str]:
    return list(dict.fromkeys(rev for rev, _ in profiles()))


def transports() -> list[str]:
    return list(dict.fromkeys(tr for _, tr in profiles()))


def config(design: str, revision: str, transport: str, ids: int, requests: int) -> Config:
    """A configuration by names; ``ValueError`` with the valid choices when a name is unknown."""
    ds = all_designs()
    if design not in ds:
        raise ValueError(f"unknown design {design!r}; valid: {', '.join(ds)}")
    return Config(ds[design], revision, transport, ids=ids, requests=requests)


def describe_config(cfg: Config) -> dict:
    return {
        **cfg.fields(),
        "label": cfg.label,
        "knobs": cfg.design.describe(),
    }


# --- moves and paths ----------------------------------------------------------------------


@dataclass(frozen=True)
class Move(_step.Move):
    """The model's move (``model/step.py``) with the page's names for it."""

    @property
    def token(self) -> str:
        parts = [self.action.name, inst_name(self.r)]
        if self.i is not None:
            parts.append(id_name(self.i))
        return ".".join(parts)

    def shown_args(self) -> dict[str, str]:
        return {"r": inst_name(self.r), **({} if self.i is None else {"i": id_name(self.i)})}


class PathError(ValueError):
    """A path that does not replay: an unknown move, or a move not enabled where it stands."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


@lru_cache(maxsize=64)
def _moves(cfg: Config) -> tuple[Move, ...]:
    """Every (action, instance, id) of the run, in the order the explorer enumerates them."""
    return tuple(Move(m.action, m.r, m.i) for m in _step.moves(cfg))


@lru_cache(maxsize=64)
def _by_token(cfg: Config) -> dict[str, Move]:
    return {m.token: m for m in _moves(cfg)}


def parse_path(cfg: Config, tokens: list[str]) -> list[Move]:
    known = _by_token(cfg)
    out = []
    for n, tok in enumerate(tokens, 1):
        if tok not in known:
            raise PathError(
                f"step {n}: {tok!r} is not a move of {cfg.label} "
                f"(an action of this run with instance and id names)",
                n,
            )
        out.append(known[tok])
    return out


@lru_cache(maxsize=64)
def _logic(cfg: Config) -> Concrete:
    return _step.backend(cfg)


def start(cfg: Config) -> State:
    return _step.start(cfg)


def enabled(cfg: Config, s: State, m: Move) -> bool:
    return _step.enabled(cfg, s, m, _logic(cfg))


def fire(cfg: Config, s: State, m: Move) -> tuple[State, dict]:
    """``(post-state, output)`` of an enabled move: the model's one step function."""
    t = _step.take(cfg, s, m, _logic(cfg))
    if t is None:
        raise ValueError(f"{m.token} is not enabled")
    return t.post, t.out


@dataclass(frozen=True)
class Step:
    move: Move
    pre: State
    post: State
    out: dict


@lru_cache(maxsize=4096)
def _after(cfg: Config, tokens: tuple[str, ...]) -> tuple[Step, ...]:
    """The steps of a path (a cache by prefix: walking one step further replays only one)."""
    if not tokens:
        return ()
    before = _after(cfg, tokens[:-1])
    m = parse_path(cfg, [tokens[-1]])[0]
    s = before[-1].post if before else start(cfg)
    if not enabled(cfg, s, m):
        n = len(tokens)
        raise PathError(f"step {n}: {m.token} is not enabled after step {n - 1} of {cfg.label}", n)
    t, out = fire(cfg, s, m)
    return before + (Step(m, s, t, out),)


def clear_caches() -> None:
    """Forget every replayed path (for measurements of a cold start)."""
    _after.cache_clear()


def replay(cfg: Config, tokens: list[str]) -> list[Step]:
    parse_path(cfg, tokens)  # an unknown token is reported by its position first
    return list(_after(cfg, tuple(tokens)))


def successors(cfg: Config, s: State) -> list[Step]:
    """Every enabled move at ``s`` with its post-state (computed now: nothing is stored)."""
    out = []
    for m in _moves(cfg):
        sources = m.action.sources(cfg)
        if sources is not None and s.life[m.r] not in sources:
            continue
        if enabled(cfg, s, m):
            t, o = fire(cfg, s, m)
            out.append(Step(m, s, t, o))
    return out


def step_story(cfg: Config, st: Step) -> str:
    return story(st.move.action, st.move.args, st.pre, st.post, st.out)


def step_changes(st: Step) -> dict:
    return changes(st.pre, st.post)


def outputs(st: Step) -> list[dict]:
    """Where each message of the step goes: ``[{"kind", "stream", "out"}]`` (stream by name)."""
    return [{"kind": k, "stream": inst_name(t), "out": bool(d)} for k, (t, d) in st.out.items()]


# --- the state as tables ------------------------------------------------------------------


def fields() -> list[dict]:
    return [
        {
            "name": f.name,
            "key": f.key,
            "sort": f.sort,
            "ghost": f.ghost,
            "wire": f.wire,
            "doc": f.doc,
        }
        for f in FIELDS
    ]


def state_table(cfg: Config, s: State, prev: State | None) -> dict:
    """Every field's value, rendered as the explorer renders it; ``changed`` against ``prev``."""
    rows = []
    for f in FIELDS:
        vals = getattr(s, f.name)
        old = getattr(prev, f.name) if prev is not None else None
        if f.key is None:
            cells = [
                {
                    "key": None,
                    "value": render_value(f, vals),
                    "before": None if old is None or old == vals else render_value(f, old),
                }
            ]
        else:
            name = inst_name if f.key == "inst" else id_name
            cells = [
                {
                    "key": name(k),
                    "value": render_value(f, v),
                    "before": None if old is None or old[k] == v else render_value(f, old[k]),
                }
                for k, v in enumerate(vals)
            ]
        rows.append(
            {
                "field": f.name,
                "key": f.key,
                "ghost": f.ghost,
                "wire": f.wire,
                "doc": f.doc,
                "cells": cells,
            }
        )
    return {
        "instances": [inst_name(r) for r in range(cfg.requests)],
        "ids": [id_name(k) for k in range(cfg.ids)],
        "rows": rows,
    }


def lifecycle(cfg: Config, steps: list[Step]) -> list[dict]:
    """Each request instance: its sender, id, current lifecycle state, and the states it passed
    through along the path (in order, without repeats)."""
    states = [start(cfg)] + [st.post for st in steps]
    s = states[-1]
    out = []
    for r in range(cfg.requests):
        seen: list[str] = []
        for x in states:
            lab = Life(x.life[r]).label
            if not seen or seen[-1] != lab:
                seen.append(lab)
        sent = Life(s.life[r]) != Life.UNSENT
        out.append(
            {
                "instance": inst_name(r),
                "life": Life(s.life[r]).label,
                "history": seen,
                "sender": ("rogue" if s.rogue[r] else "client") if sent else None,
                "id": id_name(s.rid[r]) if sent else None,
            }
        )
    return out


def life_states() -> list[str]:
    return [x.label for x in Life]


# --- properties ---------------------------------------------------------------------------


def judge(cfg: Config, s: State, last: Step | None) -> list[dict]:
    """Every property's status at state ``s``; step properties on ``last``, the step that led
    here (none at the initial state).  A broken one says which part fails."""
    b = _logic(cfg)
    res = []
    for p in PROPERTIES:
        row: dict[str, Any] = {
            "name": p.name,
            "kind": p.kind,
            "scope": p.scope,
            "applies": bool(p.applies(cfg)),
            "doc": p.doc,
        }
        if not row["applies"]:
            row["status"] = "n/a"
        elif p.scope == "step" and last is None:
            row["status"] = "no step yet"
        else:
            if p.scope == "state":
                v = bool(p.fn(b, s, cfg))
            else:
                assert last is not None  # a step property with no step is "no step yet"
                m = last.move
                v = bool(p.fn(b, last.pre, last.post, cfg, m.action, m.r, m.i, last.out))
            if p.kind == "witness":
                row["status"] = "reached" if v else "not here"
            else:
                row["status"] = "holds" if v else "fails"
            if (p.kind == "witness") == v:
                ex = explain(
                    b.domains,
                    cfg,
                    p,
                    last.pre if last else None,
                    s,
                    last.move if last else None,
                    last.out if last else None,
                )
                if ex["value"] != v:
                    raise AssertionError(f"{p.name}: explaining evaluation disagrees")
                row["where"], row["reads"] = ex["where"], ex["reads"]
                if p.scope == "step" and last is not None:
                    row["outputs"] = outputs(last)
        res.append(row)
    return res


def breaks(cfg: Config, st: Step) -> list[str]:
    """The invariants and hazards that hold before ``st`` and fail on it (a step property on
    the step itself, a state property on its post-state)."""
    b = _logic(cfg)
    out = []
    m = st.move
    for p in PROPERTIES:
        if p.kind == "witness" or not p.applies(cfg):
            continue
        if p.scope == "state":
            if p.fn(b, st.pre, cfg) and not p.fn(b, st.post, cfg):
                out.append(p.name)
        elif not p.fn(b, st.pre, st.post, cfg, m.action, m.r, m.i, st.out):
            out.append(p.name)
    return out


def properties() -> list[dict]:
    return [{"name": p.name, "kind": p.kind, "scope": p.scope, "doc": p.doc} for p in PROPERTIES]


# --- the sequence diagram -----------------------------------------------------------------


def diagram(cfg: Config, steps: list[Step]) -> dict:
    """Lanes and one arrow per step, from the project's drawing code (which replays the path
    through the model once more and checks it changes what the steps say)."""
    trace = trace_json(cfg, [(st.move.action, st.move.args, st.pre, st.post) for st in steps])
    lanes, arr = _draw_arrows(cfg, trace)
    return {
        "lanes": [{"key": k, "title": t} for k, t in lanes],
        "arrows": [
            {
                "step": a.step,
                "src": a.src,
                "dst": a.dst,
                "kind": a.kind,
                "text": a.text,
                "marked": a.marked,
                "registry": a.registry,
            }
            for a in arr
        ],
    }


# --- the explorer's traces ----------------------------------------------------------------


def trace_tokens(trace: list[dict]) -> list[str]:
    """A trace of the explorer's (its JSON form) as path tokens."""
    out = []
    for st in trace:
        a = st["args"]
        out.append(".".join([st["action"], a["r"]] + ([a["i"]] if "i" in a else [])))
    return out


@dataclass
class Explored:
    """What the page lists from one exploration: plain data, so it crosses processes."""

    states: int
    transitions: int
    depth: int
    seconds: float
    complete: bool
    traces: list[dict] = field(default_factory=list)


def explored(spec: tuple[str, str, str, int, int], max_states: int | None) -> Explored:
    """Explore a configuration (by names) and keep every trace the verdicts carry: the
    counterexamples of invariants, the witnesses reached, the hazards, and a deadlock's."""
    cfg = config(*spec)
    res = explore(cfg, progress=False, max_states=max_states)
    traces = []
    for v in res.verdicts:
        trace = trace_to_json(v.trace)
        if v.applies and trace is not None:
            what = {"invariant": "counterexample", "witness": "witness", "hazard": "hazard"}[v.kind]
            traces.append(
                {
                    "name": v.name,
                    "kind": v.kind,
                    "what": what,
                    "path": trace_tokens(trace),
                    "length": len(trace),
                    "last": trace[-1]["story"] if trace else "",
                }
            )
    deadlock = trace_to_json(res.deadlock_trace)
    if deadlock is not None:
        traces.append(
            {
                "name": "deadlock",
                "kind": "deadlock",
                "what": "deadlock",
                "path": trace_tokens(deadlock),
                "length": len(deadlock),
                "last": deadlock[-1]["story"] if deadlock else "",
            }
        )
    return Explored(
        res.states, res.transitions, res.depth, round(res.seconds, 3), res.complete, traces
    )


# --- recorded runtime traces --------------------------------------------------------------


class RecordedError(ValueError):
    """A recorded trace the page cannot open (unreadable, or nothing in it the model maps)."""


def _run_tokens(v: _Replayed) -> list[str]:
    return [Move(t.action, t.move.r, t.move.i).token for t in v.run]


def recorded(name: str, text: str) -> dict:
    """A wire trace recorded by ``mcp-inflight record`` (its JSON Lines ``text``), as the page
    lists it: what ``mcp-inflight replay`` says of it, and one path per run that explains it.

    ``runs[0]`` is the run on ``atomic``: the whole trace when it is clean, else the run up to
    the first step no move explains (``unexplained``) or through the first broken invariant
    (``broken``); the others are the runs of the designs that explain every observed step,
    each with the invariant it breaks.  ``inferred`` lists the steps (1-based) the wire did not
    show (server-internal moves the check inferred)."""
    try:
        events = parse(text.splitlines())
    except TraceError as e:
        raise RecordedError(f"{name}: unreadable trace at {e}") from None
    ab = _abstract(events)
    if not ab.steps:
        raise RecordedError(
            f"{name}: {len(events)} events but no tools/call, response, progress, cancel or "
            f"closed stream the model maps (profile {_OBSERVED_REVISION} {_OBSERVED_TRANSPORT})"
        )
    v = _check(ab)
    others = [] if v.clean else _explains(ab)
    rep = _replay_report(ab, v, others)
    runs = []
    for n, o in enumerate([v, *others]):
        path = _run_tokens(o)
        if n == 0:  # the replay's own report carries atomic's run: the same moves
            assert trace_tokens(rep["trace"]) == path
        runs.append(
            {
                "design": o.cfg.design.name,
                "revision": o.cfg.revision,
                "transport": o.cfg.transport,
                "ids": o.cfg.ids,
                "requests": o.cfg.requests,
                "path": path,
                "length": len(path),
                "inferred": [k for k, inf in enumerate(o.inferred, 1) if inf],
                "clean": o.clean,
                "unexplained": None if o.failed is None else o.failed.describe(),
                "broken": None
                if o.broken is None
                else {"invariant": o.broken, "step": o.broken_at},
            }
        )
    return {
        "name": name,
        "events": len(events),
        "observed": rep["observed"],
        "clean": rep["clean"],
        "runs": runs,
    }
