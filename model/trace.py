"""Traces as both checkers report them: names of instances and ids, changed fields, stories.

A trace is the sequence of steps from the initial state to a state (or transition) that breaks
a property; the explorer finds it by search, the prover by bounded model checking, and both
replay it on the concrete reading before they report it.  This module gives the one rendering
of a step: the action and its arguments, the story told from the action's ``story`` template
and outputs, and the fields that changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .config import Config
from .lifecycle import Life
from .logic import NONE, Concrete, Outputs
from .session import Action
from .session_state import FIELDS, Cmsg, Field, State, domains


def inst_name(r: int) -> str:
    return "-" if r == NONE else chr(ord("A") + r)


def id_name(k: int) -> str:
    return str(k + 1)


def render_value(f: Field, v: Any) -> str:
    """A field's value as the reports show it (an enumeration's label, an instance's letter)."""
    if f.domain is not None:
        if not min(f.domain) <= v <= max(f.domain):  # what a counterexample to typedness shows
            return f"{v} (out of range)"
        return f.domain(v).label
    if f.sort == "inst?":
        return inst_name(v)
    if f.sort == "id":
        return id_name(v)
    if f.sort == "bool":
        return "true" if v else "false"
    return str(v)


def changes(pre: State, post: State) -> dict[str, list[str]]:
    """The fields that changed, as ``{"life[A]": ["received", "in_flight"]}`` (times omitted)."""
    out = {}
    for f in FIELDS:
        if f.sort == "time":
            continue
        a, b = getattr(pre, f.name), getattr(post, f.name)
        if f.key is None:
            if a != b:
                out[f.name] = [render_value(f, a), render_value(f, b)]
            continue
        name = inst_name if f.key == "inst" else id_name
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                out[f"{f.name}[{name(k)}]"] = [render_value(f, x), render_value(f, y)]
    return out


_WHAT = {"progress": "progress/log", "server_request": "elicitation", "response": "response"}


def _crossed(pre: State, r: int) -> list[int]:
    """stdio: the client's other requests under r's id that it still waits on (sent, not
    answered, not cancelled by it), to which it would match a message written for r
    (``no_crossed_reply_on_stdio``, ``crossed_reply_is_impossible``)."""
    return [
        q
        for q in range(len(pre.life))
        if q != r
        and not pre.rogue[q]
        and pre.rid[q] == pre.rid[r]
        and pre.life[q] != Life.UNSENT
        and pre.cmsg[q] == Cmsg.NONE
        and not pre.got_resp[q]
    ]


def story(
    action: Action,
    args: dict[str, int],
    pre: State,
    post: State,
    out: Outputs,
    stdio: bool = False,
) -> str:
    r = args["r"]
    i = args.get("i")
    text = action.story.format(
        r=inst_name(r),
        i=id_name(i) if i is not None else "",
        id=id_name(pre.rid[r] if i is None else i),
        sender="rogue" if pre.rogue[r] else "client",
    )
    notes = []
    for kind, (t, d) in out.items():
        what = _WHAT.get(kind, kind)
        if kind == "answer":  # the waiter it resolves, not a stream it is written on
            if not d:
                notes.append("it reaches no handler (ignored)")
            else:
                wrong = pre.rogue[t] != pre.rogue[r]
                notes.append(
                    f"resolves {inst_name(t)}'s wait" + ("  <-- another sender's" if wrong else "")
                )
            continue
        if not d:
            notes.append(f"{what} dropped (no live stream)")
        elif t == r:
            notes.append(f"{what} written on its own stream")
            if stdio and action.name not in ("refuse", "reject"):
                notes += [
                    f"the client matches id={id_name(pre.rid[r])} to {inst_name(q)}'s request"
                    "  <-- crossed"
                    for q in _crossed(pre, r)
                ]
        else:
            notes.append(f"{what} written on {inst_name(t)}'s stream  <-- misrouted")
    for k, (x, y) in enumerate(zip(pre.life, post.life, strict=False)):
        if x != y and y == Life.CANCELLED and action.name == "deliver_cancel":
            notes.append(
                f"{inst_name(k)} is cancelled" + ("" if k == r else "  <-- not the one meant")
            )
    return str(text) + ("  ->  " + "; ".join(notes) if notes else "")


@dataclass(frozen=True)
class TraceStep:
    """One step of a trace: the action, its arguments by name (``{"r": "A", "i": "1"}``), the
    story of what happened and the fields that changed (``{"life[A]": ["sent", "received"]}``).

    Read-only indexing by the JSON keys (``step["story"]``) gives the same values as
    :meth:`to_json`, so code written against the JSON shape reads the record unchanged.
    """

    action: str
    args: dict[str, str]
    story: str
    changes: dict[str, list[str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "args": dict(self.args),
            "story": self.story,
            "changes": {k: list(v) for k, v in self.changes.items()},
        }

    def __getitem__(self, key: str) -> Any:
        if key not in _STEP_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def lines(self, n: int) -> list[str]:
        """The step as text, numbered ``n``: its story, then its changes on a second line."""
        out = [f"  {n}. {self.story}"]
        if self.changes:
            out.append(
                "       " + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in self.changes.items())
            )
        return out


_STEP_KEYS = frozenset(("action", "args", "story", "changes"))

#: A trace: the steps from the initial state, in order.
Trace = tuple[TraceStep, ...]


def trace_lines(trace: Iterable[TraceStep]) -> list[str]:
    """The one text rendering of a trace (explorer and prover alike)."""
    out: list[str] = []
    for n, step in enumerate(trace, 1):
        out.extend(step.lines(n))
    return out


def trace_to_json(trace: Trace | None) -> list[dict[str, Any]] | None:
    return None if trace is None else [st.to_json() for st in trace]


def build_trace(cfg: Config, steps: Iterable[tuple[Action, dict[str, int], State, State]]) -> Trace:
    """The record of a concrete run: ``steps`` are ``(action, args, pre, post)``."""
    b = Concrete(domains(cfg))
    res = []
    for action, args, pre, post in steps:
        out = action.output(b, pre, cfg, args["r"], args.get("i"))
        rendered = {k: (inst_name(v) if k == "r" else id_name(v)) for k, v in args.items()}
        res.append(
            TraceStep(
                action.name,
                rendered,
                story(action, args, pre, post, out, cfg.stdio),
                changes(pre, post),
            )
        )
    return tuple(res)


def trace_json(
    cfg: Config, steps: Iterable[tuple[Action, dict[str, int], State, State]]
) -> list[dict[str, Any]]:
    """:func:`build_trace` in its JSON shape (a list of ``{action, args, story, changes}``)."""
    return [st.to_json() for st in build_trace(cfg, steps)]


def describe_state(s: State) -> dict[str, Any]:
    """A finite state as ``{"instances": {A: {...}}, "inflight": {1: A}, ...}`` for CTIs."""
    insts: dict[str, dict[str, str]] = {}
    for n in range(len(s.life)):
        insts[inst_name(n)] = {
            f.name: render_value(f, getattr(s, f.name)[n]) for f in FIELDS if f.key == "inst"
        }
    out: dict[str, Any] = {"instances": insts}
    for f in FIELDS:
        if f.key == "id":
            out[f.name] = {id_name(k): render_value(f, v) for k, v in enumerate(getattr(s, f.name))}
        elif f.key is None:
            out[f.name] = render_value(f, getattr(s, f.name))
    return out


@dataclass(frozen=True)
class CounterexampleToInduction:
    """A state satisfying the candidate invariants, an action, and a successor that breaks
    ``broken`` (in the style of Ivy and mypyvy).  ``initial``: the property fails in the initial
    state (no action).  ``pre``/``post`` are :func:`describe_state` renderings, ``None`` when the
    counterexample needs a larger universe than was tried."""

    broken: str
    text: str
    action: str | None = None
    args: dict[str, str] | None = None
    pre: dict[str, Any] | None = None
    post: dict[str, Any] | None = None
    changes: dict[str, list[str]] | None = None
    initial: bool = False

    def to_json(self) -> dict[str, Any]:
        if self.initial:
            return {"initial": True, "broken": self.broken, "text": self.text}
        if self.pre is None:
            return {
                "broken": self.broken,
                "action": self.action,
                "pre": None,
                "post": None,
                "text": self.text,
            }
        return {
            "broken": self.broken,
            "action": self.action,
            "args": self.args,
            "pre": self.pre,
            "post": self.post,
            "changes": self.changes,
            "text": self.text,
        }

    def lines(self) -> list[str]:
        """The one text rendering of a counterexample to induction."""
        lines = [f"  counterexample to induction: {self.text}"]
        if self.pre is None or self.post is None:
            return lines
        for label, st in (("pre-state", self.pre), ("post-state", self.post)):
            lines.append(f"    {label}:")
            for name, vals in st["instances"].items():
                lines.append(f"      {name}: " + " ".join(f"{k}={v}" for k, v in vals.items()))
            regs = [f"{f}[{k}]={v}" for f in ("inflight", "stream") for k, v in st[f].items()]
            lines.append("      " + " ".join(regs) + f" clock={st['clock']}")
        if self.changes:
            lines.append(
                "    changes: "
                + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in self.changes.items())
            )
        lines.append(f"    broken conjunct: {self.broken}")
        return lines
