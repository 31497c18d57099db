"""The explorer's compiled engine: the model's rules, specialised per run, over flat states.

Calling each rule of ``model/`` once with the code-generating backend of ``model/codegen.py``,
for a fixed configuration and fixed action arguments ``(r, i)``, yields the source of that rule
specialised to them; :class:`Compiled` reads the state through :class:`View` (reads of the flat
tuple of ``proofs/flat.py``), joins these into one generated module per run and ``exec``s it.
Nothing here states a lifecycle rule: every guard, effect and property still comes from
``model/``.  ``tests/test_compiled.py`` checks that this engine and the interpreted one
(``model/step.py``) agree on every transition of explored state spaces.

Successor states are built by copying the tuple and applying the writes in list order, as
``model.logic.apply_writes`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from mcp_inflight.model.codegen import Expr, Gen, Source, compile_source, lift
from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import Write
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.property_kinds import Property, judged
from mcp_inflight.model.session import Action, actions_for
from mcp_inflight.model.session_state import FIELDS, Cmsg, domains, initial, settled
from mcp_inflight.proofs.flat import FieldCode, Layout

# --- reading the flat state ------------------------------------------------------------


def _index_src(base: int, stride: int, n: int, k: Expr) -> str:
    """Source of the flat position of key ``k`` (an expression) of a field."""
    if k.maybe_neg:
        # tuple indexing semantics of the concrete reading: s.f[-1] is the last slot
        idx = f"{k.src} % {n}"
        return f"{base} + ({idx}) * {stride}" if stride != 1 else f"{base} + {idx}"
    return f"{base} + {k.src} * {stride}" if stride != 1 else f"{base} + {k.src}"


class _FieldView(FieldCode):
    __slots__ = ("unpacked",)

    def __init__(
        self, var: str, base: int, n: int, sort: str, stride: int, unpacked: str | None = None
    ) -> None:
        super().__init__(var, base, n, sort, stride)
        self.unpacked = unpacked

    def __getitem__(self, k: Any) -> Expr:
        neg = self.sort == "inst?"
        if isinstance(k, Expr):
            return Expr(f"{self.var}[{_index_src(self.base, self.stride, self.n, k)}]", neg)
        pos = self.position(k)
        if self.unpacked:
            return Expr(f"{self.unpacked}{pos}", neg)
        return Expr(f"{self.var}[{pos}]", neg)


class View:
    """A state as the model reads it (``s.life[r]``, ``s.clock``), generating source over ``var``."""

    def __init__(self, layout: Layout, var: str, unpacked: str | None = None):
        self._var = var
        for f in FIELDS:
            b = layout.base[f.name]
            if f.key is None:
                x = f"{unpacked}{b}" if unpacked else f"{var}[{b}]"
                setattr(self, f.name, Expr(x, f.sort == "inst?"))
            else:
                setattr(
                    self,
                    f.name,
                    _FieldView(
                        var, b, layout.size[f.name], f.sort, layout.stride[f.name], unpacked
                    ),
                )


def unpack_line(layout: Layout, var: str = "s", prefix: str = "x") -> str:
    """``(x0, x1, ...) = s``: the slots a View with ``unpacked=prefix`` reads by name."""
    return "(" + ", ".join(f"{prefix}{k}" for k in range(layout.width)) + f",) = {var}"


# --- code generation -----------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One action with fixed arguments; ``kinds`` names the outputs in the order returned."""

    index: int
    action: Any
    r: int
    i: int | None
    kinds: tuple[str, ...]

    @property
    def args(self) -> dict[Any, Any]:
        return {"r": self.r} if self.i is None else {"r": self.r, "i": self.i}


def hoist_outputs(
    out: dict[str, Any], kinds: tuple[str, ...], src: Source, d: int
) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """Each output's (target, data) computed once into a local (``ot<n>``, ``od<n>``) at depth
    ``d``, so the effect and the output tuple read the same values: (the outputs as the effect
    reads them, their flat source)."""
    hoisted: dict[str, tuple[Any, Any]] = {}
    flat_out: list[str] = []
    for n, kind in enumerate(kinds):
        t_, d_ = out[kind]
        names: list[Any] = []
        for part, val in (("t", t_), ("d", d_)):
            if isinstance(val, Expr):
                src.emit(d, f"o{part}{n} = {val.src}")
                names.append(Expr(f"o{part}{n}", val.maybe_neg))
            else:
                names.append(val)
        hoisted[kind] = (names[0], names[1])
        flat_out.extend(lift(x) for x in names)
    return hoisted, flat_out


def move_head(
    src: Source, a: Action, r: int, i: int | None, guard: Any, out: dict[str, Any]
) -> tuple[int, dict[str, tuple[Any, Any]], list[str]]:
    """The generated text of move ``a(r, i)`` up to its effect: a comment naming it, its
    guard's ``if`` (where the guard is not constant) and its outputs hoisted; (the depth of its
    body, the outputs as the effect reads them, their flat source)."""
    src.emit(1, f"# {a.name} r={r} i={i}")
    d = 1
    if isinstance(guard, Expr):
        src.emit(d, f"if {guard.src}:")
        d += 1
    hoisted, flat_out = hoist_outputs(out, tuple(out), src, d)
    return d, hoisted, flat_out


def move_effect(
    lay: Layout,
    b: Gen,
    pre: Any,
    cfg: Config,
    a: Action,
    r: int,
    i: int | None,
    hoisted: dict[str, tuple[Any, Any]],
    src: Source,
    d: int,
) -> None:
    """The successor ``t`` of move ``a(r, i)``: its effect's writes applied to the flat
    pre-state (unpacked into ``x``), and on stdio the clock renumbered."""
    writes = a.effect(b, pre, cfg, r, i, hoisted)
    _writes_source(lay, writes, src, d, "w", unpacked="x")
    if cfg.stdio:
        _clock_source(lay, cfg, src, "t", d)


def _clock_source(lay: Layout, cfg: Config, src: Source, var: str, depth: int) -> None:
    """stdio: ``model.session_state.canonical_clock`` on the flat tuple ``var`` (rebinds ``var``).

    The same renumbering (send times replaced by their rank among undelivered messages), kept
    here in flat form for speed; the agreement test compares it with the model's function on
    every explored transition.
    """
    n = cfg.requests
    P = lay.pos
    CL = lay.base["clock"]
    d = depth
    src.emit(d, "_p = []")
    for r in range(n):
        src.emit(
            d,
            f"if {var}[{P('life', r)}] == {int(Life.SENT)}: "
            f"_p.append(({var}[{P('ts', r)}], {P('ts', r)}))",
        )
        src.emit(
            d,
            f"if {var}[{P('cmsg', r)}] == {int(Cmsg.WIRE)}: "
            f"_p.append(({var}[{P('cts', r)}], {P('cts', r)}))",
        )
    src.emit(d, "_p.sort()")
    src.emit(d, f"_c = list({var})")
    for r in range(n):
        src.emit(d, f"_c[{P('ts', r)}] = 0; _c[{P('cts', r)}] = 0")
    src.emit(d, "for _k, (_x, _at) in enumerate(_p):")
    src.emit(d + 1, "_c[_at] = _k")
    src.emit(d, f"_c[{CL}] = len(_p)")
    src.emit(d, f"{var} = tuple(_c)")


def _writes_source(
    lay: Layout, writes: list[Write], src: Source, d: int, tag: str, unpacked: str | None = None
) -> None:
    """Emit the computation of every key, value and condition from the pre-state, then the
    copy of ``s`` with the writes applied in list order, bound to ``t``."""
    live = []
    for j, w in enumerate(writes):
        if not isinstance(w.when, Expr) and not w.when:
            continue
        name = f"{tag}{j}"
        f = w.field
        base, n, stride = lay.base[f], lay.size[f], lay.stride[f]
        if w.key is None:
            pos = str(base)
            key_src = None
        elif isinstance(w.key, Expr):
            src.emit(d, f"k{name} = {w.key.src}")
            key_src = f"k{name}"
            pos = _index_src(base, stride, n, Expr(key_src, False))
        else:
            k = int(w.key)
            if k < 0:
                key_src = repr(k)
                pos = None
            else:
                key_src = None
                pos = str(lay.pos(f, k))
        val = lift(w.value)
        if isinstance(w.value, Expr):
            src.emit(d, f"v{name} = {val}")
            val = f"v{name}"
        cond = None
        if isinstance(w.when, Expr):
            src.emit(d, f"w{name} = {w.when.src}")
            cond = f"w{name}"
        check = isinstance(w.key, Expr) and w.key.maybe_neg or (pos is None)
        live.append((f, pos, key_src, val, cond, check, n))
    if not live:
        src.emit(d, "t = s")
        return
    if unpacked and all(
        cond is None and not check and pos is not None and pos.isdigit()
        for _, pos, _, _, cond, check, _ in live
    ):
        # every write lands on a fixed slot: build the successor as one tuple display
        slots = {int(pos): val for _, pos, _, val, _, _, _ in live if pos is not None}
        src.emit(
            d, "t = (" + ", ".join(slots.get(k, f"{unpacked}{k}") for k in range(lay.width)) + ",)"
        )
        return
    src.emit(d, "n = list(s)")
    for f, pos, key_src, val, cond, check, _n in live:
        dd = d
        if cond is not None:
            src.emit(dd, f"if {cond}:")
            dd += 1
        if check:
            src.emit(
                dd,
                f"if {key_src} < 0: raise ValueError('write to {f}[' + str({key_src}) + "
                f"']: an unmasked NONE key (model bug)')",
            )
        if pos is not None:
            src.emit(dd, f"n[{pos}] = {val}")
    src.emit(d, "t = tuple(n)")


class Compiled:
    """The generated functions of one configuration.

    ``expand(s)`` returns, for flat state ``s``, the list of ``(move index, successor, outputs,
    failed step properties)`` of every enabled move (successor already clock-canonical on stdio;
    outputs a tuple ``(t0, d0, t1, d1, ...)`` in the move's ``kinds`` order; failed step
    properties as indices into ``step_props``: a step invariant or hazard that fails, a step
    witness reached; a witness with a path is judged on steps, ``model.property_kinds.judged``).  ``state_checks[j](s)`` evaluates state property
    ``state_props[j]``; ``settled(s)`` is the model's ``settled``.
    """

    def __init__(self, cfg: Config, properties: Sequence[Property] = PROPERTIES):
        self.cfg = cfg
        self.layout = lay = Layout(cfg)
        b = Gen(domains(cfg))
        pre = View(lay, "s", unpacked="x")
        post = View(lay, "t")
        self._unpack = unpack_line(lay)
        props = [p for p in judged(properties) if p.applies(cfg)]
        self.step_props = [p for p in props if p.scope == "step"]
        self.state_props = [p for p in props if p.scope == "state"]
        self.moves: list[Move] = []
        src = Source()
        src.emit(0, "def expand(s):")
        src.emit(1, self._unpack)
        src.emit(1, "res = []")
        for a in actions_for(cfg):
            for r in range(cfg.requests):
                for i in range(cfg.ids) if "i" in a.params else (None,):
                    self._move(b, pre, post, cfg, a, r, i, src)
        src.emit(1, "return res")
        src.emit(0, "")
        self._state_src = []
        for j, p in enumerate(self.state_props):
            v = lift(p.fn(b, pre, cfg))
            self._state_src.append(v)
            src.emit(0, f"def state_check_{j}(s):")
            src.emit(1, self._unpack)
            src.emit(1, f"return {v}")
        src.emit(0, "def settled(s):")
        src.emit(1, self._unpack)
        src.emit(1, f"return {lift(settled(b, pre))}")
        src.emit(0, "def clock(s):")
        if cfg.stdio:
            _clock_source(lay, cfg, src, "s", 1)
        src.emit(1, "return s")
        self.source = src.text()
        ns = compile_source(self.source, f"<compiled model: {cfg.label} {cfg.ids}x{cfg.requests}>")
        self.expand = ns["expand"]
        self.settled = ns["settled"]
        self.clock = ns["clock"]
        self.state_checks = [ns[f"state_check_{j}"] for j in range(len(self.state_props))]

    def _move(
        self,
        b: Gen,
        pre: View,
        post: View,
        cfg: Config,
        a: Action,
        r: int,
        i: int | None,
        src: Source,
    ) -> None:
        m = len(self.moves)
        guard = a.guard(b, pre, cfg, r, i)
        out = a.output(b, pre, cfg, r, i)
        kinds = tuple(out)
        self.moves.append(Move(m, a, r, i, kinds))
        if not isinstance(guard, Expr) and not guard:
            return
        d, hoisted, flat_out = move_head(src, a, r, i, guard, out)
        move_effect(self.layout, b, pre, cfg, a, r, i, hoisted, src, d)
        events = []  # a step invariant or hazard that fails, a step witness reached
        for j, p in enumerate(self.step_props):
            v = p.fn(b, pre, post, cfg, a, r, i, hoisted)
            wit = p.kind == "witness"
            if isinstance(v, Expr):
                events.append((j, f"({v.src})" if wit else f"not ({v.src})"))
            elif bool(v) == wit:
                events.append((j, "True"))
        outs = "(" + "".join(x + ", " for x in flat_out) + ")"
        if events:
            src.emit(d, "bad = []")
            for j, cond in events:
                src.emit(d, f"if {cond}: bad.append({j})")
            src.emit(d, f"res.append(({m}, t, {outs}, bad))")
        else:
            src.emit(d, f"res.append(({m}, t, {outs}, ()))")

    def event_function(self, pending: list[int]) -> Callable[[tuple[Any, ...]], bool]:
        """One function telling whether any of the state properties ``pending`` (indices into
        ``state_props``) has an event in ``s``: an invariant or hazard fails, a witness holds."""
        parts = []
        for j in pending:
            v = self._state_src[j]
            parts.append(f"({v})" if self.state_props[j].kind == "witness" else f"not ({v})")
        text = (
            f"def events(s):\n    {self._unpack}\n    return "
            + (" or ".join(parts) if parts else "False")
            + "\n"
        )
        ns = compile_source(text, "<state events>")
        return cast(Callable[[tuple[Any, ...]], bool], ns["events"])

    def out_dict(self, move: Move, outs: tuple[Any, ...]) -> dict[Any, Any]:
        return {k: (outs[2 * n], outs[2 * n + 1]) for n, k in enumerate(move.kinds)}

    def initial(self) -> tuple[Any, ...]:
        return cast(tuple[Any, ...], self.clock(self.layout.flatten(initial(self.cfg))))
