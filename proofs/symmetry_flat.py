"""The session model's symmetry check on the compiled engine's flat states.

The same check as ``proofs/symmetry.py:check_interpreted`` (its docstring states the property:
every rule, output and property commutes with renaming ids and instances, checked under the
generators of the renaming group on the first ``limit`` reachable states, breadth first), with
the same states in the same order, the same first break named and the same result; only the
evaluation differs.  The reference reads every guard, effect, output and property through
``model/step.py`` and the concrete backend and renames ``State`` namedtuples field by field;
here each rule is generated once per configuration as Python over the flat tuple of
``proofs/flat.py`` with ``model/codegen.py`` (as the compiled explorer does), and each
generator's renaming is one generated function that permutes the tuple's slots and maps the
values of the id and instance sorts.  Nothing here states a rule: the generated text is the
model's rules, specialised.

Per flat state one generated call gives, for every move: ``None`` where the relaxed guard (the
guard without ``SLOT_ORDER``) is false, else the clock-canonical successor, the outputs, the
verdict of every step property and whether the full guard holds (the breadth-first search
follows only those).  ``tests/test_symmetry.py`` checks that both paths give the same result on
every design and profile, and that a rule treating one id apart is caught here too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.codegen import Expr, Gen, Source, compile_source, lift
from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.property_kinds import Property
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_conditions import SLOT_ORDER
from mcp_inflight.model.session_state import FIELDS, State, domains, initial

from .compiled_model import View, _clock_source, move_effect, move_head, unpack_line
from .declared_symmetry import Broken
from .flat import Layout
from .renaming import Renaming, SymmetryResult, generators


@dataclass(frozen=True)
class _Move:
    action: Any
    r: int
    i: int | None
    kinds: tuple[str, ...]

    def text(self) -> str:
        args = {"r": self.r} if self.i is None else {"r": self.r, "i": self.i}
        return f"{self.action.name}({', '.join(f'{k}={v}' for k, v in args.items())})"


def _value_src(sort: str, x: str, g: int) -> str:
    """Source of value ``x`` of ``sort`` renamed by generator ``g``'s tables."""
    if sort == "id":
        return f"_D{g}[{x}]"
    if sort == "inst?":
        return f"_N{g}[{x}]"
    return x


class Generated:
    """The generated functions of one configuration: ``relaxed(s)`` (one entry per move, see
    the module docstring), ``verdicts(s)`` (the state properties' verdicts), ``rename[g](s)``
    (the renaming by generator ``g``, clock-canonical) and ``clock(s)``."""

    def __init__(self, cfg: Config, properties: Sequence[Property]):
        self.cfg = cfg
        self.layout = lay = Layout(cfg)
        self.gens = generators(cfg)
        b = Gen(domains(cfg))
        pre = View(lay, "s", unpacked="x")
        post = View(lay, "t")
        unpack = unpack_line(lay)
        props = [p for p in properties if p.applies(cfg)]
        self.state_props = [p for p in props if p.scope == "state"]
        self.step_props = [p for p in props if p.scope == "step"]
        self.moves: list[_Move] = []
        src = Source()
        src.emit(0, "def relaxed(s):")
        src.emit(1, unpack)
        src.emit(1, "res = []")
        for a in actions_for(cfg):
            for r in range(cfg.requests):
                for i in range(cfg.ids) if "i" in a.params else (None,):
                    self._move(b, pre, post, a, r, i, src)
        src.emit(1, "return res")
        src.emit(0, "def verdicts(s):")
        src.emit(1, unpack)
        vs = [f"bool({lift(p.fn(b, pre, cfg))})" for p in self.state_props]
        src.emit(1, "return (" + "".join(v + ", " for v in vs) + ")")
        src.emit(0, "def clock(s):")
        if cfg.stdio:
            _clock_source(lay, cfg, src, "s", 1)
        src.emit(1, "return s")
        for g, pi in enumerate(self.gens):
            self._rename(g, pi, src)
        self.source = src.text()
        ns = compile_source(self.source, f"<symmetry check: {cfg.label} {cfg.ids}x{cfg.requests}>")
        self.relaxed: Callable[[tuple[Any, ...]], list[Any]] = ns["relaxed"]
        self.verdicts: Callable[[tuple[Any, ...]], tuple[Any, ...]] = ns["verdicts"]
        self.clock: Callable[[tuple[Any, ...]], tuple[Any, ...]] = ns["clock"]
        self.rename = [ns[f"rename_{g}"] for g in range(len(self.gens))]
        init = lay.flatten(initial(cfg))
        # per instance: where its lifecycle state is, and its instance-keyed slots at their
        # initial values (an unsent slot must keep them: the slot order relies on it)
        self.unsent = [
            (
                lay.pos("life", r),
                [
                    (lay.pos(f.name, r), init[lay.pos(f.name, r)], f"{f.name}[{r}]")
                    for f in FIELDS
                    if f.key == "inst"
                ],
            )
            for r in range(cfg.requests)
        ]

    def _move(
        self, b: Gen, pre: View, post: View, a: Any, r: int, i: int | None, src: Source
    ) -> None:
        cfg = self.cfg
        guard = a.guard(b, pre, cfg, r, i, skip=(SLOT_ORDER,))
        full = a.guard(b, pre, cfg, r, i)
        out = a.output(b, pre, cfg, r, i)
        kinds = tuple(out)
        self.moves.append(_Move(a, r, i, kinds))
        if not isinstance(guard, Expr) and not guard:
            src.emit(1, "res.append(None)")
            return
        d, hoisted, flat_out = move_head(src, a, r, i, guard, out)
        src.emit(d, f"en = bool({lift(full)})")
        move_effect(self.layout, b, pre, cfg, a, r, i, hoisted, src, d)
        steps = [
            f"bool({lift(p.fn(b, pre, post, cfg, a, r, i, hoisted))})" for p in self.step_props
        ]
        outs = "(" + "".join(x + ", " for x in flat_out) + ")"
        verdicts = "(" + "".join(x + ", " for x in steps) + ")"
        src.emit(d, f"res.append((t, {outs}, {verdicts}, en))")
        if isinstance(guard, Expr):
            src.emit(1, "else:")
            src.emit(2, "res.append(None)")

    def _rename(self, g: int, pi: Renaming, src: Source) -> None:
        """``rename_{g}(s)``: every slot moved to its renamed key, every id and instance value
        renamed, then the clock renumbered (``symmetry.rename_state`` on the flat tuple)."""
        lay = self.layout
        src.emit(0, f"_D{g} = {tuple(pi.ids)!r}")
        inst = {v: pi.inst[v] for v in range(len(pi.inst))}
        inst[-1] = -1  # NONE names no instance
        src.emit(0, f"_N{g} = {inst!r}")
        slots = [""] * lay.width
        for f in FIELDS:
            if f.key is None:
                at = lay.base[f.name]
                slots[at] = _value_src(f.sort, f"s[{at}]", g)
                continue
            perm = pi.inst if f.key == "inst" else pi.ids
            for k in range(lay.size[f.name]):
                slots[lay.pos(f.name, perm[k])] = _value_src(f.sort, f"s[{lay.pos(f.name, k)}]", g)
        src.emit(0, f"def rename_{g}(s):")
        src.emit(1, "return clock((" + "".join(x + ", " for x in slots) + "))")

    def typed(self, flat: tuple[Any, ...]) -> State:
        """The ``State`` of a flat tuple, its values in their domains (as the reference's are)."""
        s = self.layout.unflatten(flat)
        vals = []
        for f in FIELDS:
            conv: Callable[[Any], Any] = (
                f.domain if f.domain is not None else bool if f.sort == "bool" else int
            )
            x = getattr(s, f.name)
            vals.append(conv(x) if f.key is None else tuple(conv(v) for v in x))
        return State(*vals)


def _unsent_apart(gen: Generated, s: tuple[Any, ...]) -> str | None:
    unsent = int(Life.UNSENT)
    for life, slots in gen.unsent:
        if s[life] != unsent:
            continue
        for at, v, name in slots:
            if s[at] != v:
                return name
    return None


def check(cfg: Config, limit: int, properties: Sequence[Property]) -> SymmetryResult:
    """``symmetry.check_interpreted(cfg, limit)`` on flat states, ``properties`` the model's."""
    gen = Generated(cfg, properties)
    gens = gen.gens
    ms = gen.moves
    at = {(m.action.name, m.r, m.i): k for k, m in enumerate(ms)}
    renamed = [
        [at[m.action.name, pi.inst[m.r], None if m.i is None else pi.ids[m.i]] for m in ms]
        for pi in gens
    ]
    # where a move and its renaming list their outputs in the same order, their tuples are
    # compared directly; else as the reference does, by kind
    same_kinds = [
        [ms[k].kinds == ms[renamed[g][k]].kinds for k in range(len(ms))] for g in range(len(gens))
    ]
    # an output's target is an instance or NONE (kept), its data no id or instance
    out_inst = [{v: pi.inst[v] for v in range(len(pi.inst))} for pi in gens]
    relaxed: dict[tuple[Any, ...], list[Any]] = {}
    judged: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    step_props = gen.step_props

    def steps_of(s: tuple[Any, ...]) -> list[Any]:
        found = relaxed.get(s)
        if found is None:
            found = relaxed[s] = gen.relaxed(s)
        return found

    def verdicts_of(s: tuple[Any, ...]) -> tuple[Any, ...]:
        found = judged.get(s)
        if found is None:
            found = judged[s] = gen.verdicts(s)
        return found

    def broken(
        rule: str, pi: Renaming, s: tuple[Any, ...], move: str, count: int
    ) -> SymmetryResult:
        return SymmetryResult(cfg.label, count, False, Broken(rule, str(pi), gen.typed(s), move))

    s0 = gen.clock(gen.layout.flatten(initial(cfg)))
    seen = {s0}
    todo = deque([s0])
    count, cut = 0, False
    while todo:
        s = todo.popleft()
        count += 1
        apart = _unsent_apart(gen, s)
        if apart is not None:
            rule = f"slot order (unsent slot {apart} differs from its initial value)"
            return SymmetryResult(cfg.label, count, False, Broken(rule, "-", gen.typed(s), "-"))
        mine = steps_of(s)
        for g, pi in enumerate(gens):
            ps = gen.rename[g](s)
            for p, v, w in zip(gen.state_props, verdicts_of(s), verdicts_of(ps), strict=True):
                if v != w:
                    return broken(f"property {p.name}", pi, s, "-", count)
            theirs = steps_of(ps)
            rn = gen.rename[g]
            nmap = out_inst[g]
            for k, t in enumerate(mine):
                u = theirs[renamed[g][k]]
                where = None
                if (t is None) != (u is None):
                    where = f"the guard of {ms[k].action.name}"
                elif t is not None and u is not None:
                    if rn(t[0]) != u[0]:
                        where = f"the effect of {ms[k].action.name}"
                    elif not _outs_agree(ms, k, renamed[g][k], t[1], u[1], nmap, same_kinds[g][k]):
                        where = f"the output of {ms[k].action.name}"
                    else:
                        for p, v, w in zip(step_props, t[2], u[2], strict=True):
                            if v != w:
                                where = f"property {p.name}"
                                break
                if where is not None:
                    return broken(where, pi, s, ms[k].text(), count)
        # the search follows the moves whose full guard holds, in the reference's order
        for t in mine:
            if t is not None and t[3] and t[0] not in seen:
                if len(seen) >= limit:
                    cut = True
                    continue
                seen.add(t[0])
                todo.append(t[0])
    return SymmetryResult(cfg.label, count, not cut, None)


def _outs_agree(
    ms: list[_Move],
    k: int,
    j: int,
    mine: tuple[Any, ...],
    theirs: tuple[Any, ...],
    nmap: dict[Any, Any],
    same: bool,
) -> bool:
    """Move ``k``'s outputs ``mine``, their targets renamed, equal move ``j``'s ``theirs``."""
    ren = tuple(nmap.get(x, x) if n % 2 == 0 else x for n, x in enumerate(mine))
    if same:
        return ren == theirs
    a = {kind: (ren[2 * n], ren[2 * n + 1]) for n, kind in enumerate(ms[k].kinds)}
    b = {kind: (theirs[2 * n], theirs[2 * n + 1]) for n, kind in enumerate(ms[j].kinds)}
    return a == b
