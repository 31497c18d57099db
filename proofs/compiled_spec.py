"""The one explorer's compiled engine: a declared model's rules as Python, specialised per move.

Every guard, output, effect and property of a :class:`~mcp_inflight.model.declare.Spec` is a
function of a logic ``b`` and a state (``model/declare.py``).  Called once with the
code-generating backend of ``model/codegen.py`` and a state whose reads are source text, for one
move with its arguments fixed, a rule yields its own source specialised to that move: the
design's knobs, the bounds and the arguments folded away, quantifiers unrolled over the finite
sorts.  :func:`compile_spec` joins these into one module per spec and ``exec``s it:

* per move, ``fire(s) -> (post, output) | None``: the guard, then the output and the writes read
  on ``s``, applied in order to copies of the written variables (a write to a ``NONE`` key is a
  model bug, raised as the concrete step raises it), then the model's ``canon``; and every
  move's at once, ``expand(s) -> [(k, post, output)]`` of the moves enabled on ``s`` (what the
  explorer's search calls: one call a state);
* per state property (``always``, auxiliary, ``sometimes``, liveness goals) ``fn(s) -> bool``;
* per step property (``step``, ``hazard``, ``happens``) and move ``fn(pre, post, out) -> bool``;
* ``in_range(s)``: every slot within its variable's range.

Nothing here states a rule.  The explorer runs on these functions or on the concrete logic
(``proofs/explorer.py``'s ``engine``); ``tests/test_compiled_spec.py`` checks that the two find
the same states, transitions, verdicts, traces and coverage on every design of every model.
A rule the generator cannot read (one that branches with a Python ``if`` on a state value, which
the declaration forbids) is refused with :class:`Refused`; the explorer then runs concretely and
says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.codegen import Expr, Gen, Source, compile_source, lift, maybe_negative
from mcp_inflight.model.declare import Move, Spec
from mcp_inflight.model.logic import ModelError, Write

Fire = Callable[[Any], "tuple[Any, Mapping[str, Any]] | None"]
StateTest = Callable[[Any], bool]
StepTest = Callable[[Any, Any, Mapping[str, Any]], bool]


class Refused(Exception):
    """A rule the generator cannot specialise (the explorer falls back to the concrete logic)."""


class _Expr(Expr):
    """An expression of generated Python; products too (a slot index computed from two keys)."""

    __slots__ = ()

    def __mul__(self, o: object) -> Expr:
        return self._make(f"({self.src} * {lift(o)})", self.maybe_neg or maybe_negative(o))

    def __rmul__(self, o: object) -> Expr:
        return self._make(f"({lift(o)} * {self.src})", self.maybe_neg or maybe_negative(o))


class _Gen(Gen):
    expr = _Expr


class _Keyed:
    """A keyed variable of a state in generated code: ``prefix + name`` is the tuple."""

    __slots__ = ("src", "n")

    def __init__(self, src: str, n: int) -> None:
        self.src = src
        self.n = n

    def __getitem__(self, k: Any) -> Expr:
        if isinstance(k, Expr):
            return _Expr(f"{self.src}[{k.src}]")
        if isinstance(k, bool) or not isinstance(k, int):
            raise Refused(f"{self.src} indexed by {k!r}")
        return _Expr(f"{self.src}[{int(k)}]")

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Expr]:
        return (self[k] for k in range(self.n))


class _View:
    """A state whose variables read as source: ``s.var`` (scalar) and ``s.var[k]`` (keyed)."""

    def __init__(self, spec: Spec, prefix: str) -> None:
        for v in spec.vars:
            src = prefix + v.name
            setattr(self, v.name, _Expr(src) if v.keys is None else _Keyed(src, v.keys))


def _unpack(spec: Spec, prefix: str, name: str) -> str:
    names = [prefix + v.name for v in spec.vars]
    return f"({', '.join(names)},) = {name}"


def _test_src(x: Any) -> str:
    """Source of a truth value: an expression, or a constant the generator folded."""
    if isinstance(x, Expr):
        return f"bool({x.src})"
    if isinstance(x, (bool, int)):
        return "True" if x else "False"
    raise Refused(f"a rule gave {x!r} where a truth value belongs")


@dataclass
class CompiledSpec:
    """The generated functions of one spec (see the module text); ``source`` is the module."""

    fire: list[Fire | None]  # per move of ``spec.moves()``; None: its guard folds to false
    state: dict[str, StateTest]  # property name (auxiliary: ``aux:<name>``) -> test
    step: list[dict[str, StepTest]]  # per move: step property name -> test
    in_range: StateTest
    source: str
    #: ``expand(s)``: ``[(k, post, output)]`` of every move enabled on ``s``, in move order
    expand: Callable[[Any], list[tuple[int, Any, Mapping[str, Any]]]]
    #: per move: ``events(pre, post, out)``, the step properties whose event the transition is
    #: (a ``step`` or ``hazard`` property false on it, a ``happens`` witness true)
    events: list[Callable[[Any, Any, Mapping[str, Any]], list[str]] | None]
    #: ``state_events(s)``: the ``always`` properties and auxiliary invariants (``aux:<name>``)
    #: false on ``s`` and the ``sometimes`` witnesses true on it
    state_events: Callable[[Any], list[str]]


def compile_spec(spec: Spec) -> CompiledSpec:
    """The rules of ``spec`` generated and compiled (:class:`Refused` when one cannot be)."""
    try:
        return _compile(spec)
    except (ModelError, TypeError, AttributeError, KeyError) as e:
        raise Refused(f"{type(e).__name__}: {e}") from e


def _compile(spec: Spec) -> CompiledSpec:
    g = _Gen(spec.domains)
    src = Source()
    moves = list(spec.moves())
    pre, post = _View(spec, "p_"), _View(spec, "q_")
    names: dict[str, Any] = {}  # generated name -> property or move slot, for collection
    fires: list[str | None] = []
    for k, m in enumerate(moves):
        fires.append(_emit_fire(spec, g, src, k, m, pre))
    _emit_expand(spec, g, src, moves, pre)
    state_props = [(p.name, p) for p in spec.props if p.scope == "state"]
    state_props += [("aux:" + p.name, p) for p in spec.aux]
    state_tests = []
    for n, (key, p) in enumerate(state_props):
        fn = f"state_{n}"
        test = _test_src(p.fn(g, pre))
        src.emit(0, f"def {fn}(p):")
        src.emit(1, _unpack(spec, "p_", "p"))
        src.emit(1, f"return {test}")
        names[fn] = key
        if p.kind in ("always", "sometimes") or key.startswith("aux:"):
            state_tests.append((key, test, p.kind == "sometimes" and not key.startswith("aux:")))
    # the safety properties and witnesses of a state at once: the names whose event the state
    # is (an ``always`` property or auxiliary invariant false on it, a ``sometimes`` true)
    src.emit(0, "def state_events(p):")
    src.emit(1, _unpack(spec, "p_", "p"))
    src.emit(1, "ev = []")
    for key, test, when_true in state_tests:
        if test in ("True", "False"):
            if (test == "True") == when_true:
                src.emit(1, f"ev.append({key!r})")
            continue
        src.emit(1, f"if {test if when_true else 'not ' + test}:")
        src.emit(2, f"ev.append({key!r})")
    src.emit(1, "return ev")
    step_props = [p for p in spec.props if p.scope == "step"]
    step_names: list[dict[str, str]] = []
    events: list[str | None] = []
    for k, m in enumerate(moves):
        mine: dict[str, str] = {}
        if fires[k] is None:
            step_names.append(mine)
            events.append(None)
            continue
        out = _output_view(spec, g, m, pre)
        tests = []
        for n, p in enumerate(step_props):
            fn = f"step_{k}_{n}"
            test = _test_src(p.on_step(g, pre, post, m, out))
            src.emit(0, f"def {fn}(p, q, o):")
            src.emit(1, _unpack(spec, "p_", "p"))
            src.emit(1, _unpack(spec, "q_", "q"))
            src.emit(1, f"return {test}")
            mine[p.name] = fn
            tests.append((p, test))
        step_names.append(mine)
        # every step property of the move at once: the names whose event the transition is
        # (a step or hazard property false on it, a ``happens`` witness true)
        fn = f"events_{k}"
        src.emit(0, f"def {fn}(p, q, o):")
        src.emit(1, _unpack(spec, "p_", "p"))
        src.emit(1, _unpack(spec, "q_", "q"))
        src.emit(1, "ev = []")
        for p, test in tests:
            hit = test if p.kind == "happens" else f"not {test}"
            if test in ("True", "False"):
                if (test == "True") == (p.kind == "happens"):
                    src.emit(1, f"ev.append({p.name!r})")
                continue
            src.emit(1, f"if {hit}:")
            src.emit(2, f"ev.append({p.name!r})")
        src.emit(1, "return ev")
        events.append(fn)
    src.emit(0, "def in_range(p):")
    src.emit(1, _unpack(spec, "p_", "p"))
    checks = []
    for v in spec.vars:
        slots = [f"p_{v.name}"] if v.keys is None else [f"p_{v.name}[{k}]" for k in range(v.keys)]
        checks += [f"{v.lo} <= {x} <= {v.hi}" for x in slots]
    src.emit(1, "return " + (" and ".join(checks) or "True"))
    text = src.text()
    ns = compile_source(text, f"<compiled {spec.model} {spec.design}>")
    ns["State"], ns["canon"] = spec.state_type, spec.canon
    return CompiledSpec(
        fire=[None if f is None else ns[f] for f in fires],
        state={key: ns[fn] for fn, key in names.items()},
        step=[{p: ns[fn] for p, fn in mine.items()} for mine in step_names],
        in_range=ns["in_range"],
        source=text,
        expand=ns["expand"],
        events=[None if f is None else ns[f] for f in events],
        state_events=ns["state_events"],
    )


def _output_view(spec: Spec, g: Gen, m: Move, pre: _View) -> dict[str, Any]:
    """The move's output as the step properties read it: each name a read of ``o`` (a tuple
    of reads where the value is a tuple)."""
    return {name: _read(f"o[{name!r}]", v) for name, v in m.act.outputs(g, pre, **m.kw).items()}


def _read(src: str, shape: Any) -> Any:
    if isinstance(shape, tuple):
        return tuple(_read(f"{src}[{n}]", x) for n, x in enumerate(shape))
    return _Expr(src)


def _lift(v: Any) -> str:
    """Source of an output value: an expression, a constant, or a tuple of them."""
    if isinstance(v, tuple):
        return "(" + "".join(_lift(x) + ", " for x in v) + ")"
    return lift(v)


def _emit_fire(spec: Spec, g: Gen, src: Source, k: int, m: Move, pre: _View) -> str | None:
    guard = m.act.guard(g, pre, **m.kw)
    if not isinstance(guard, Expr) and not guard:
        return None
    fn = f"fire_{k}"
    src.emit(0, f"def {fn}(p):")
    src.emit(1, _unpack(spec, "p_", "p"))
    if isinstance(guard, Expr):
        src.emit(1, f"if not ({guard.src}):")
        src.emit(2, "return None")
    post = _emit_step(spec, g, src, m, pre, 1)
    src.emit(1, f"return ({post} if canon is None else canon({post})), o")
    return fn


def _emit_expand(spec: Spec, g: Gen, src: Source, moves: list[Move], pre: _View) -> None:
    """``expand(p)``: every enabled move's ``(k, post, output)`` on ``p``, in the order of
    ``spec.moves()``, each move's guard and step inline (one call per state, where ``fire``
    is one per move)."""
    src.emit(0, "def expand(p):")
    src.emit(1, _unpack(spec, "p_", "p"))
    src.emit(1, "res = []")
    for k, m in enumerate(moves):
        guard = m.act.guard(g, pre, **m.kw)
        if not isinstance(guard, Expr) and not guard:
            continue
        depth = 1
        if isinstance(guard, Expr):
            src.emit(1, f"if {guard.src}:")
            depth = 2
        post = _emit_step(spec, g, src, m, pre, depth)
        src.emit(depth, f"res.append(({k}, {post} if canon is None else canon({post}), o))")
    src.emit(1, "return res")


def _emit_step(spec: Spec, g: Gen, src: Source, m: Move, pre: _View, depth: int) -> str:
    """The output ``o`` and the writes of ``m`` on the unpacked ``p_`` names, at ``depth``;
    returns the source of the successor (before ``canon``)."""
    a = m.act
    d = depth
    out = a.outputs(g, pre, **m.kw)
    src.emit(d, "o = {" + ", ".join(f"{n!r}: {_lift(v)}" for n, v in out.items()) + "}")
    writes: list[Write] = list(a.effect(g, pre, **m.kw))
    keyed = {v.name for v in spec.vars if v.keys is not None}
    written: list[str] = []
    for w in writes:
        if w.field not in {v.name for v in spec.vars}:
            raise Refused(f"{a.name} writes {w.field!r}, not a variable")
        if w.field not in written:
            written.append(w.field)
    for f in written:
        src.emit(d, f"n_{f} = list(p_{f})" if f in keyed else f"n_{f} = p_{f}")
    for w in writes:
        when = w.when
        if not isinstance(when, Expr) and not when:
            continue
        at = d
        if isinstance(when, Expr):
            src.emit(d, f"if {when.src}:")
            at = d + 1
        value = lift(w.value)
        if w.key is None:
            src.emit(at, f"n_{w.field} = {value}")
            continue
        key = lift(w.key)
        if isinstance(w.key, Expr):
            src.emit(at, f"k = {key}")
            src.emit(at, "if k < 0:")
            msg = f"write to {w.field}[{{k}}]: an unmasked NONE key (model bug)"
            src.emit(at + 1, f"raise ValueError(f{msg!r})")
            key = "k"
        elif int(w.key) < 0:
            raise Refused(f"{a.name} writes {w.field}[{w.key}]: an unmasked NONE key")
        src.emit(at, f"n_{w.field}[{key}] = {value}")
    parts = []
    for v in spec.vars:
        if v.name not in written:
            parts.append(f"p_{v.name}")
        elif v.name in keyed:
            parts.append(f"tuple(n_{v.name})")
        else:
            parts.append(f"n_{v.name}")
    return f"State({', '.join(parts)})"
