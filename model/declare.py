"""The one declaration of a model: a protocol beside the session model, declared as data.

The session model (``model/session.py``) has its own explorer, prover and generated engines.
Every other model (the lease protocol of many workers, ``model/lease.py``; input-required
rounds, ``model/rounds.py``; resumable streams, ``model/resume.py``) is declared here as a
:class:`Spec`, and read by the checker of ``proofs/`` (its breadth-first explorer and z3
induction prover). Its rules follow the discipline of ``model/logic.py``: guards, effects and
properties are plain functions of a logic ``b`` and a state ``s`` (``s.var[k]`` for a keyed
variable, ``s.var`` for a scalar), combining values with ``==``, ``!=``, ``<``, ``+`` and
``b.And``/``b.Or``/``b.Not``/``b.Implies``/``b.Ite``/``b.In``/``b.ForAll``/``b.Exists``;
effects are lists of :class:`~.logic.Write`. No Python ``if`` on a state value: Python ``if``
and loops only on the design, the bounds, an action's arguments and the finite key ranges, so
the same function is read concretely (the explorer, the runtime agreement tests) and
symbolically (the prover).

A :class:`Spec` is:

* ``vars``: the state variables (:class:`Var`), every value an integer in ``lo..hi`` (flags are
  0/1); a variable is a scalar (``keys=None``) or a tuple over ``0..keys-1``;
* ``acts``: the actions (:class:`Act`), each with named parameters over finite ranges; a move is
  an action with its arguments fixed;
* ``props``: the properties (:class:`Prop`): ``always`` (every reachable state), ``step`` (every
  transition: ``fn(b, pre, post, move)``), and the witnesses ``sometimes`` (some reachable
  state) and ``happens`` (some reachable transition);
* ``aux``: auxiliary invariants (``always``) that help the prover's induction; the explorer
  checks them too, so a wrong one is reported, never assumed;
* ``domains``: the finite sorts ``ForAll``/``Exists`` range over (``{"tok": range(4)}``);
* ``unbounded``: the sorts of ``domains`` the prover takes for any size (a keyed variable over
  one is a z3 array, an argument over one any natural), so that what it proves is ``proved``
  for any number of them, not only at these bounds; ``universes``: the finite sizes of those
  sorts, smallest first, on which the prover looks for a counterexample to induction to show
  (default: every sort 1 or 2);
* ``run``: the bounds in words, when the model names them itself.

What a model may say beyond that, every part optional, each with a default that keeps the plain
declaration above meaning what it meant:

* a variable's ``role``: ``server`` (state a server keeps), ``wire`` (what the wire carries) or
  ``ghost`` (only the properties read it); ``sort``: the symmetric sort its slots range over;
  ``ref``: the sort its values name (``NONE`` allowed when ``lo`` is ``NONE``); ``grows``: a
  natural with no upper bound for the prover (``hi`` is the bound the explorer checks);
  ``boolean``: a flag read as a truth value;
* an action's ``side`` (``server``, ``client`` or ``environment``), ``fair`` (``weak``: a
  liveness property may rest on it; ``none``: a property that names it is refused), ``sorts``
  (the sort of each named parameter), ``output`` (``fn(b, s, **args) -> {name: value}``: what
  the move tells, read by the step properties and the runtime agreement tests), ``out_sorts``
  (the sort each output's value names, ``"*"`` for every output, a tuple of sorts for a tuple
  value: what a renaming of the sorts renames in it) and ``tell`` (``fn(args, pre, post,
  out)``: the move's story once taken, when it says more than ``story(args)``);
* properties of kind ``liveness`` (:func:`eventually`: every run weakly fair to the actions it
  names reaches a goal state, from every reachable state; of the graph itself, on no fairness,
  :func:`reachable`: a goal state stays reachable, and :func:`unstuck`: every state outside
  the goal has a move that changes it) and ``hazard`` (a step
  property the protocol cannot guarantee, given a sender it names: judged and reported like a
  step invariant, its failure never fails the run); a step property declared ``with_output``
  reads the move's output as a fifth argument;
* a spec's ``ranks`` (:class:`Ranks`): send times kept as their ranks among the live ones, an
  exact abstraction applied after every step (the session's stdio clock), declared as data so
  that every engine, the native one included, applies the same renumbering; the spec's
  ``canon`` is that renumbering as a Python function (None without ``ranks``);
* a spec's ``final`` states: where a run may end, so that a state with no move there is no
  deadlock (by default every state with no move is one);
* a spec's ``ordered`` sorts: those whose slots the rules fill in order (a slot is *used* once
  a variable keyed by the sort, naming no sort or starting at ``NONE``, leaves its initial
  value there), each with why: the symmetry
  reduction of ``proofs/declared_symmetry.py`` renames them only among the used slots; and its
  ``asymmetric`` sorts: those its rules do not treat alike at all, each with why (left out);
* a model module's designs as :class:`Design` knobs with their mutants, its bounds as
  :class:`Bound` (default and help), its hazards as :class:`Hazard` (a run in which a bound
  enables the action that the protocol cannot exclude).

A model module gives ``DESIGNS`` (names, the safe design first), ``BOUNDS`` (bound name ->
(default, help)) and ``spec(design, **bounds) -> Spec``.  This module also holds the one
concrete step (:func:`take`) and the one rendering of a trace step (:func:`render_step`).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any, NamedTuple

from .logic import Concrete, Write, apply_writes

#: Every model written in this declaration, in the order the tools list them: name -> module
#: (each with ``DESIGNS``, ``BOUNDS`` and ``spec``; imported by :func:`declared_models`, so that
#: reading the names imports none of them).  The drawings, the models page and the command
#: lines read this one list.
DECLARED_MODELS = {
    "lease": "mcp_inflight.model.lease",
    "rounds": "mcp_inflight.model.rounds",
    "resume": "mcp_inflight.model.resume",
    "tasks": "mcp_inflight.model.tasks",
    "subscriptions": "mcp_inflight.model.subscriptions",
}


def declared_models() -> dict[str, Any]:
    """:data:`DECLARED_MODELS` with each module imported."""
    import importlib

    return {name: importlib.import_module(m) for name, m in DECLARED_MODELS.items()}


KINDS = ("always", "step", "sometimes", "happens", "liveness", "hazard")
#: what a liveness property says of its goal: ``eventually`` (every run weakly fair to the
#: actions it names reaches it), ``reachable`` (some run reaches it from every state) and
#: ``unstuck`` (every state outside it has a move that changes the state)
SHAPES = ("eventually", "reachable", "unstuck")
ROLES = ("server", "wire", "ghost")
SIDES = ("server", "client", "environment")
FAIRNESS = ("none", "weak")


@dataclass(frozen=True)
class Var:
    """A state variable: a scalar (``keys=None``) or a tuple of ``keys`` slots, each an integer
    in ``lo..hi``, ``init`` in every slot at the start.  ``show`` names a value and ``key`` a
    slot in traces; ``ghost`` marks what only the properties read (no rule depends on it)."""

    name: str
    lo: int
    hi: int
    init: int
    keys: int | None = None
    show: Callable[[int], str] | None = None
    key: Callable[[int], str] | None = None
    ghost: bool = False
    role: str = "server"
    sort: str | None = None
    ref: str | None = None
    grows: bool = False
    boolean: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"{self.name}: unknown role {self.role!r}")
        if self.ghost or self.role == "ghost":
            object.__setattr__(self, "ghost", True)
            object.__setattr__(self, "role", "ghost")

    def label(self, v: int) -> str:
        """``v`` as the reports show it; a value outside the variable's range (what a
        counterexample to typedness shows) as the number it is, said so.  (A reference's
        range is its sort's size in the universe shown, so it is not judged here.)"""
        if self.ref is None and (v < self.lo or (v > self.hi and not self.grows)):
            return f"{v} (out of range)"
        return self.show(v) if self.show is not None else str(v)

    def slot(self, k: int) -> str:
        return f"{self.name}[{self.key(k) if self.key is not None else k}]"


@dataclass(frozen=True)
class Act:
    """An action: ``guard(b, s, **args)`` and ``effect(b, s, **args) -> [Write]``; ``params`` are
    ``(name, size)`` pairs (an argument ranges over ``0..size-1``); ``story(args)`` tells the
    move in words (``args`` as given, integers); ``actor`` names who takes it (a lane of the
    drawn counterexamples)."""

    name: str
    params: tuple[tuple[str, int], ...]
    guard: Callable[..., Any]
    effect: Callable[..., list[Write]]
    story: Callable[[Mapping[str, int]], str]
    actor: str = "server"
    side: str = ""
    fair: str = "none"
    sorts: tuple[tuple[str, str], ...] = ()
    output: Callable[..., Mapping[str, Any]] | None = None
    out_sorts: tuple[tuple[str, str | tuple[str | None, ...]], ...] = ()
    tell: Callable[[Mapping[str, int], Any, Any, Mapping[str, Any]], str] | None = None

    def __post_init__(self) -> None:
        if not self.side:
            object.__setattr__(self, "side", "server" if self.actor == "server" else "client")
        if self.side not in SIDES:
            raise ValueError(f"{self.name}: unknown side {self.side!r}")
        if self.fair not in FAIRNESS:
            raise ValueError(f"{self.name}: unknown fairness {self.fair!r}")

    def sort_of(self, param: str) -> str | None:
        """The sort parameter ``param`` ranges over, if declared."""
        return dict(self.sorts).get(param)

    def outputs(self, b: Any, s: Any, **args: int) -> Mapping[str, Any]:
        """What the move tells from ``s`` (empty when the action declares no output)."""
        return {} if self.output is None else self.output(b, s, **args)


@dataclass(frozen=True)
class Move:
    """An action with its arguments fixed (``kw``: the arguments by name)."""

    act: Act
    args: tuple[tuple[str, int], ...]
    name: str = field(init=False, compare=False)
    kw: dict[str, int] = field(init=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.act.name)
        object.__setattr__(self, "kw", dict(self.args))

    def __str__(self) -> str:
        return f"{self.act.name}({', '.join(f'{k}={v}' for k, v in self.args)})"


@dataclass(frozen=True)
class Prop:
    """A property: ``kind`` one of ``always`` (``fn(b, s)`` in every reachable state), ``step``
    (``fn(b, pre, post, move)`` on every transition), ``sometimes`` (``fn(b, s)`` in some
    reachable state: a witness), ``happens`` (``fn(b, pre, post, move)`` on some reachable
    transition: a witness of a move, such as a refusal that changes no variable).  ``doc``: what it says, in a sentence."""

    name: str
    kind: str
    fn: Callable[..., Any]
    doc: str
    fair: tuple[str, ...] = ()
    with_output: bool = False
    #: of a ``liveness`` property, what it says of its goal (:data:`SHAPES`)
    shape: str = "eventually"

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"{self.name}: unknown liveness shape {self.shape!r}")
        if self.shape != "eventually" and (self.kind != "liveness" or self.fair):
            raise ValueError(f"{self.name}: a {self.shape} property is liveness on no fairness")

    @property
    def scope(self) -> str:
        """``step`` for a property of transitions, else ``state``."""
        return "step" if self.kind in ("step", "happens", "hazard") else "state"

    def on_step(self, b: Any, pre: Any, post: Any, move: Any, out: Mapping[str, Any]) -> Any:
        """A step property (or ``happens`` witness) on one transition."""
        if self.with_output:
            return self.fn(b, pre, post, move, out)
        return self.fn(b, pre, post, move)


def always(fn: Callable[..., Any]) -> Prop:
    return _prop("always", fn)


def step(fn: Callable[..., Any]) -> Prop:
    return _prop("step", fn)


def sometimes(fn: Callable[..., Any]) -> Prop:
    return _prop("sometimes", fn)


def happens(fn: Callable[..., Any]) -> Prop:
    return _prop("happens", fn)


def step_output(fn: Callable[..., Any]) -> Prop:
    """A step property that also reads the move's output: ``fn(b, pre, post, move, out)``."""
    return replace(_prop("step", fn), with_output=True)


def eventually(*fair: str) -> Callable[[Callable[..., Any]], Prop]:
    """A liveness property ``fn(b, s)``: from every reachable state, every run that is weakly
    fair to the actions ``fair`` names (a move of theirs that stays enabled is taken) reaches a
    state where it holds.  A goal that stays reachable only through a move nobody owes is not
    reached "eventually"."""

    def make(fn: Callable[..., Any]) -> Prop:
        return replace(_prop("liveness", fn), fair=tuple(fair))

    return make


def reachable(fn: Callable[..., Any]) -> Prop:
    """A liveness property ``fn(b, s)`` of the graph itself: from every reachable state some
    run reaches a state where it holds (no fairness is needed: the run need only exist)."""
    return replace(_prop("liveness", fn), shape="reachable")


def unstuck(fn: Callable[..., Any]) -> Prop:
    """A liveness property ``fn(b, s)`` of the graph itself: every reachable state where it
    does not hold has a move that changes the state (a move to the same state, such as one
    that only sends a message, is no way out)."""
    return replace(_prop("liveness", fn), shape="unstuck")


def _prop(kind: str, fn: Callable[..., Any]) -> Prop:
    if not fn.__doc__:
        raise ValueError(f"property {fn.__name__} has no docstring")
    return Prop(fn.__name__, kind, fn, " ".join(fn.__doc__.split()))


def bind(p: Prop, *extra: Any) -> Prop:
    """``p`` with ``extra`` passed after its own arguments (a property written against a
    model's configuration, bound to one run's)."""
    fn = p.fn
    return replace(p, fn=lambda *a: fn(*a, *extra))


class Bound(NamedTuple):
    """A bound of a model: its default and what it counts."""

    default: int
    help: str


@dataclass(frozen=True)
class Design:
    """A design: named safeguards (``knobs``, each on or off), read as attributes
    (``design.fenced_writes``); a mutant is the safe design with one or more knobs turned."""

    name: str
    doc: str
    knobs: tuple[tuple[str, bool], ...] = ()

    def __getattr__(self, knob: str) -> bool:
        if knob.startswith("__"):
            raise AttributeError(knob)
        for k, v in self.__dict__.get("knobs", ()):
            if k == knob:
                return bool(v)
        raise AttributeError(knob)

    def mutant(self, name: str, doc: str, **turned: bool) -> Design:
        """This design with the knobs ``turned`` (each must be one of its knobs)."""
        have = dict(self.knobs)
        bad = set(turned) - set(have)
        if bad:
            raise ValueError(f"{name}: unknown knob(s) {', '.join(sorted(bad))}")
        return Design(name, doc, tuple({**have, **turned}.items()))


@dataclass(frozen=True)
class Hazard:
    """A trace the protocol cannot exclude under any design: the action that makes it possible
    is enabled only in the hazard's own run (bound ``bound`` set to 1), and the invariants are
    judged there."""

    name: str
    doc: str
    remedy: str
    bound: str


@dataclass(frozen=True)
class Ranks:
    """Send times kept by their order alone: ``clock`` (a scalar) is the next time, and each of
    ``stamps`` is a variable of times with the condition ``live(b, s, k)`` under which its slot
    ``k`` holds one that is still read.  After every step each live time is replaced by its
    rank among all live ones (ordered by time, then by the stamp's place in ``stamps``, then
    by slot), every other time by 0, and the clock by their number.  Exact when only the order
    of live times is ever read: every guard, effect and property gives the same answer before
    and after (the model says why; its agreement tests show it)."""

    clock: str
    stamps: tuple[tuple[str, Callable[[Any, Any, int], Any]], ...]

    def function(self, spec: Spec) -> Callable[[Any], Any]:
        """The renumbering as a function of a state of ``spec``: generated as Python once per
        spec, each live condition specialised to its slot (``model/codegen.py``)."""
        from .codegen import Expr, Gen, Source, compile_source, lift

        at = {v.name: n for n, v in enumerate(spec.vars)}

        class Keyed:
            def __init__(self, n: int) -> None:
                self.n = n

            def __getitem__(self, k: int) -> Expr:
                return Expr(f"s[{self.n}][{k}]")

        view = type("View", (), {})()
        for v in spec.vars:
            setattr(view, v.name, Expr(f"s[{at[v.name]}]") if v.keys is None else Keyed(at[v.name]))
        g = Gen(spec.domains)
        src = Source()
        src.emit(0, "def ranked(s):")
        src.emit(1, "live = []")
        slots: list[tuple[int, int]] = []
        for j, (name, is_live) in enumerate(self.stamps):
            for k in range(spec.var(name).keys or 1):
                cond = is_live(g, view, k)
                test = cond.src if isinstance(cond, Expr) else lift(bool(cond))
                src.emit(1, f"if {test}: live.append((s[{at[name]}][{k}], {len(slots)}))")
                slots.append((j, k))
        src.emit(1, "live.sort()")
        src.emit(1, f"new = [0] * {len(slots)}")
        src.emit(1, "for rank, (_, n) in enumerate(live): new[n] = rank")
        parts = []
        for v in spec.vars:
            mine = [n for n, (j, _) in enumerate(slots) if self.stamps[j][0] == v.name]
            if v.name == self.clock:
                parts.append("len(live)")
            elif mine:
                parts.append("(" + "".join(f"new[{n}], " for n in mine) + ")")
            else:
                parts.append(f"s[{at[v.name]}]")
        src.emit(1, f"return T({', '.join(parts)})")
        ns = compile_source(src.text(), f"<ranks of {spec.model} {spec.design}>")
        ns["T"] = spec.state_type
        fn: Callable[[Any], Any] = ns["ranked"]
        return fn


@dataclass(frozen=True)
class Spec:
    """One small model at one design and bounds (see the module text)."""

    model: str
    design: str
    bounds: Mapping[str, int]
    vars: tuple[Var, ...]
    acts: tuple[Act, ...]
    props: tuple[Prop, ...]
    domains: Mapping[str, Sequence[int]]
    aux: tuple[Prop, ...] = ()
    unbounded: tuple[str, ...] = ()
    run: str = ""
    universes: tuple[tuple[tuple[str, int], ...], ...] = ()
    #: send times kept by rank (:class:`Ranks`), applied to the initial state and to every
    #: successor: the session's stdio clock.  None: states are kept as the effects write them.
    ranks: Ranks | None = field(default=None, compare=False)
    #: where a run may end, ``fn(b, s)``: a state with no move where it holds is no deadlock
    #: (the session's settled states).  None: every state with no move is one.
    final: Callable[[Any, Any], Any] | None = field(default=None, compare=False)
    #: sorts whose slots the rules fill in order, each with why: ``(sort, reason)`` (a slot is
    #: used once a variable keyed by the sort, naming no sort or starting at ``NONE``, leaves its
    #: initial value there; ``proofs/declared_symmetry.py`` renames only the used slots)
    ordered: tuple[tuple[str, str], ...] = ()
    #: sorts the rules do not treat alike at all, each with why: ``(sort, reason)``
    asymmetric: tuple[tuple[str, str], ...] = ()
    state_type: Any = field(init=False, repr=False, compare=False)
    #: :attr:`ranks` as a function of a state (None without them), built once
    canon: Callable[[Any], Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        acts = {x.name: x for x in self.acts}
        for p in self.props + self.aux:
            if p.kind not in KINDS:
                raise ValueError(f"{p.name}: unknown kind {p.kind!r}")
            for a in p.fair:
                if a not in acts:
                    raise ValueError(f"{p.name}: rests on the fairness of {a!r}, not an action")
                if acts[a].fair != "weak":  # a property cannot lend an action its fairness
                    raise ValueError(
                        f"{p.name}: rests on the weak fairness of {a}, which its declaration "
                        f"does not give it (fair={acts[a].fair!r})"
                    )
        for s in self.unbounded:
            if s not in self.domains:
                raise ValueError(f"unbounded sort {s!r} is not a sort of the model")
        object.__setattr__(
            self, "state_type", namedtuple(f"{self.model}_state", [v.name for v in self.vars])
        )
        if self.ranks is not None:
            for name in (self.ranks.clock, *(n for n, _ in self.ranks.stamps)):
                self.var(name)  # KeyError names a stamp or clock that is not a variable
        object.__setattr__(self, "canon", None if self.ranks is None else self.ranks.function(self))

    def var(self, name: str) -> Var:
        for v in self.vars:
            if v.name == name:
                return v
        raise KeyError(name)

    def prop(self, name: str) -> Prop:
        for p in self.props:
            if p.name == name:
                return p
        raise KeyError(name)

    def initial(self) -> Any:
        s = self.state_type(*[v.init if v.keys is None else (v.init,) * v.keys for v in self.vars])
        return s if self.canon is None else self.canon(s)

    def post(self, s: Any, writes: list[Write]) -> Any:
        """The successor of ``s`` by ``writes`` (then :attr:`canon`, if the model has one)."""
        t = apply_writes(s, writes)
        return t if self.canon is None else self.canon(t)

    def logic(self) -> Concrete:
        return Concrete(self.domains)

    def moves(self) -> Iterator[Move]:
        for a in self.acts:
            names = [n for n, _ in a.params]
            for vals in product(*[range(size) for _, size in a.params]):
                yield Move(a, tuple(zip(names, vals, strict=True)))

    def act(self, name: str) -> Act:
        for a in self.acts:
            if a.name == name:
                return a
        raise KeyError(name)

    def bounds_label(self) -> str:
        """The run's bounds in words (``run`` when the model names them itself)."""
        return self.run or ", ".join(f"{k}={v}" for k, v in self.bounds.items())

    def label(self) -> str:
        return f"{self.model} {self.design} ({self.bounds_label()})"


def enabled(spec: Spec, s: Any, move: Move, b: Concrete | None = None) -> bool:
    return bool(move.act.guard(b or spec.logic(), s, **move.kw))


def take(spec: Spec, s: Any, move: Move, b: Concrete | None = None) -> Any | None:
    """The successor of ``s`` by ``move``, or None when its guard does not hold."""
    b = b or spec.logic()
    if not move.act.guard(b, s, **move.kw):
        return None
    return spec.post(s, move.act.effect(b, s, **move.kw))


def out_of_range(spec: Spec, s: Any) -> str | None:
    """The first slot of ``s`` outside its variable's range (a model bug), or None."""
    for v in spec.vars:
        vals = getattr(s, v.name)
        for k, x in enumerate((vals,) if v.keys is None else vals):
            if not v.lo <= x <= v.hi:
                where = v.name if v.keys is None else v.slot(k)
                return f"{where} = {x} is outside {v.lo}..{v.hi}"
    return None


def changes(spec: Spec, pre: Any, post: Any) -> dict[str, list[str]]:
    """The slots that changed, as ``{"phase[c0]": ["holding", "running"]}``."""
    out: dict[str, list[str]] = {}
    for v in spec.vars:
        a, z = getattr(pre, v.name), getattr(post, v.name)
        if v.keys is None:
            if a != z:
                out[v.name] = [v.label(a), v.label(z)]
            continue
        for k, (x, y) in enumerate(zip(a, z, strict=True)):
            if x != y:
                out[v.slot(k)] = [v.label(x), v.label(y)]
    return out


def render_step(
    spec: Spec, move: Move, pre: Any, post: Any, out: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One step of a trace as JSON: the action, its arguments, its story, the changed slots
    (an action with a ``tell`` is told from its states and ``out``, its output)."""
    a = move.act
    return {
        "action": move.name,
        "args": move.kw,
        "story": a.story(move.kw) if a.tell is None else a.tell(move.kw, pre, post, out or {}),
        "changes": changes(spec, pre, post),
    }


def describe(spec: Spec, s: Any) -> dict[str, Any]:
    """A whole state as JSON (``{"phase[c0]": "holding", "clock": "0"}``)."""
    out: dict[str, Any] = {}
    for v in spec.vars:
        vals = getattr(s, v.name)
        if v.keys is None:
            out[v.name] = v.label(vals)
        else:
            for k, x in enumerate(vals):
                out[v.slot(k)] = v.label(x)
    return out


def loop_header(first: int, last: int) -> str:
    """The line before a lasso's loop, steps ``first`` to ``last`` (every model's text)."""
    return f"  loop (steps {first}-{last} repeat forever):"


def step_lines(n: int, st: Mapping[str, Any]) -> list[str]:
    """The text of one rendered step: its story, then its changes."""
    out = [f"  {n}. {st['story']}"]
    if st["changes"]:
        out.append("       " + ", ".join(f"{k}: {a} -> {b}" for k, (a, b) in st["changes"].items()))
    return out
