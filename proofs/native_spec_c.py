"""The C text of the declared models' native engine (``proofs/native_spec.py``).

Every guard, output, effect and property of a :class:`~mcp_inflight.model.declare.Spec` is
called once with the code-generating backend of ``model/codegen.py`` spelling C, for one move
with its arguments fixed, as ``proofs/compiled_spec.py`` does for Python: the design's knobs,
the bounds and the arguments fold away, quantifiers unroll over the finite sorts.  A state is
packed one signed byte per slot (the variables in declaration order, a keyed variable's slots
in key order).  :func:`generate` joins, per move of the move table (the moves whose guard does
not fold to false, in ``spec.moves()`` order):

* ``mv_<j>(p, q, need, res, err)``: the guard on ``p``; the outputs as C locals; ``q`` = ``p``
  with the writes applied in order (keys, values and conditions all read on ``p``, as the
  compiled engine reads them), then ``ranks(q)``; then each step property still ``need``-ed judged on ``(p, q,
  outputs)`` into ``res``.  A write to a negative key or past the last slot, or of a value that
  does not fit a byte, stops the run (``err``): a model bug;
* ``ranks(q)``: the spec's :class:`~mcp_inflight.model.declare.Ranks` applied to ``q`` in
  place (every live condition generated as the guards are, read on ``q`` before any time is
  renumbered), called by each move after its writes and before its step properties, and on
  the initial state; it changes nothing when the spec has no ranks;
* ``judge(p, need, res)``: each state property (``always``, auxiliary, ``sometimes``, liveness
  goals) on ``p``; ``in_range(p)``: every slot within its variable's range;
* ``final(p)``: the spec's ``final`` on ``p`` (where a run may end: a state with no move
  there is no deadlock), generated as the state properties are; 0 when the spec has none;
* ``canon(s, out)``: the state the search keeps for ``s``: ``s`` itself, or under symmetry
  reduction (``REDUCE``) the least of its renamings (``proofs/native_spec_symmetry.py``);

and the search of :data:`SEARCH` (breadth first, an open-addressing hash set of the packed
states, parent pointers, the graph's edges when there is a liveness property, and the fair
strongly connected components).  Nothing here states a rule.  A spec this cannot read (a
variable wider than a byte, a ``canon`` that is not the spec's ranks, ranks whose clock is keyed or
whose stamp is a scalar, a rule the generator refuses) raises ``Refused``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model import codegen
from mcp_inflight.model.codegen import Expr, Gen, Source, lift
from mcp_inflight.model.declare import Move, Prop, Spec
from mcp_inflight.model.logic import ModelError, Write

from .compiled_spec import Refused as CompiledRefused
from .native_spec_check import Unchecked, check_source
from .native_spec_search import SEARCH
from .native_spec_symmetry import Untabulated, canon_source

#: ``canon`` of a search that keeps every state as it is
IDENTITY = "static void canon(const sc *s, sc *out) { memcpy(out, s, NV); }\n"

C_SYNTAX = codegen.Syntax("1", "0", " && ", " || ", "(!{x})", "({c} ? {a} : {b})", False)


class Refused(CompiledRefused):
    """A spec the native engine does not run (the reason says which feature)."""


class CExpr(Expr):
    """A C expression; products too (a slot index computed from two keys)."""

    __slots__ = ()
    syntax = C_SYNTAX

    def __mul__(self, o: object) -> Expr:
        return self._make(f"({self.src} * {_c(o)})", self.maybe_neg or codegen.maybe_negative(o))

    def __rmul__(self, o: object) -> Expr:
        return self._make(f"({_c(o)} * {self.src})", self.maybe_neg or codegen.maybe_negative(o))


class CGen(Gen):
    expr = CExpr


def _c(x: object) -> str:
    return lift(x, C_SYNTAX)


class _Keyed:
    """A keyed variable of a packed state: slot ``k`` is ``arr[base + k]``; a key that may be
    negative (``NONE``) reads as Python's tuple indexing does, from the end."""

    __slots__ = ("arr", "base", "n")

    def __init__(self, arr: str, base: int, n: int) -> None:
        self.arr, self.base, self.n = arr, base, n

    def __getitem__(self, k: Any) -> Expr:
        if isinstance(k, Expr):
            idx = f"((({k.src}) % {self.n} + {self.n}) % {self.n})" if k.maybe_neg else k.src
            return CExpr(f"{self.arr}[{self.base} + {idx}]")
        if isinstance(k, bool) or not isinstance(k, int):
            raise Refused(f"a variable indexed by {k!r}")
        if not -self.n <= k < self.n:
            raise Refused(f"a variable of {self.n} slots indexed by {k}")
        return CExpr(f"{self.arr}[{self.base + k % self.n}]")

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Expr]:
        return (self[k] for k in range(self.n))


def layout(spec: Spec) -> dict[str, int]:
    """Each variable's first byte in the packed state."""
    base, at = {}, 0
    for v in spec.vars:
        base[v.name] = at
        at += 1 if v.keys is None else v.keys
    return base


class _View:
    def __init__(self, spec: Spec, arr: str) -> None:
        base = layout(spec)
        for v in spec.vars:
            b = base[v.name]
            setattr(
                self, v.name, CExpr(f"{arr}[{b}]") if v.keys is None else _Keyed(arr, b, v.keys)
            )


def _truth(x: Any) -> str:
    if isinstance(x, Expr):
        return f"(({x.src}) ? 1 : 0)"
    if isinstance(x, (bool, int)):
        return "1" if x else "0"
    raise Refused(f"a rule gave {x!r} where a truth value belongs")


@dataclass
class Generated:
    """The C of one spec and the tables the Python side reads its results by."""

    source: str
    table: list[int]  # move-table row -> index in ``spec.moves()``
    moves: list[Move]  # every move of ``spec.moves()``
    state_props: list[tuple[str, Prop]]  # (verdict key, property), C order
    step_props: list[Prop]  # C order
    nslots: int
    #: with ``symmetry``: the tables of the symmetry check in C (``proofs/native_spec_check.py``),
    #: or why it is not generated (a ``str``: the Python check is made instead)
    check: Any = None


def refusal(spec: Spec) -> str | None:
    """Why the native engine does not run ``spec`` (None: it may try)."""
    if spec.canon is not None and spec.ranks is None:
        # never today: a spec's canon is its ranks' renumbering (``model/declare.py``)
        return "the spec abstracts its states with a canon (a Python function the C cannot run)"
    if spec.ranks is not None:
        if spec.var(spec.ranks.clock).keys is not None:
            return f"the clock {spec.ranks.clock} of the ranks is not a scalar"
        for name, _ in spec.ranks.stamps:
            if spec.var(name).keys is None:
                return f"stamp {name} of the ranks is a scalar, not a variable of slots"
    for v in spec.vars:
        if v.lo < -128 or v.hi > 127:
            return f"variable {v.name} ranges over {v.lo}..{v.hi}, wider than a byte"
    return None


def generate(spec: Spec, symmetry: bool = False) -> Generated:
    """The C of ``spec`` (:class:`Refused` when a rule or a variable cannot be read); with
    ``symmetry``, each state kept as the least of its renamings (``canon``,
    ``proofs/native_spec_symmetry.py``)."""
    why = refusal(spec)
    if why is not None:
        raise Refused(why)
    try:
        return _generate(spec, symmetry)
    except (ModelError, TypeError, AttributeError, KeyError, IndexError) as e:
        raise Refused(f"{type(e).__name__}: {e}") from e


def _generate(spec: Spec, symmetry: bool) -> Generated:
    g = CGen(spec.domains)
    moves = list(spec.moves())
    base = layout(spec)
    nslots = sum(1 if v.keys is None else v.keys for v in spec.vars)
    p, q = _View(spec, "p"), _View(spec, "q")
    state_props = [(x.name, x) for x in spec.props if x.scope == "state"]
    state_props += [("aux:" + x.name, x) for x in spec.aux]
    step_props = [x for x in spec.props if x.scope == "step"]
    src = Source()
    _emit_ranks(spec, g, src, q, base)
    table: list[int] = []
    for k, m in enumerate(moves):
        if _emit_move(spec, g, src, len(table), m, p, q, base, step_props):
            table.append(k)
    src.emit(0, "static void judge(const sc *p, const unsigned char *need, unsigned char *res) {")
    for n, (_, x) in enumerate(state_props):
        src.emit(1, f"if (need[{n}]) res[{n}] = {_truth(x.fn(g, p))};")
    src.emit(0, "}")
    src.emit(0, "static int in_range(const sc *p) {")
    checks = []
    for v in spec.vars:
        for k in range(1 if v.keys is None else v.keys):
            checks.append(f"({v.lo} <= p[{base[v.name] + k}] && p[{base[v.name] + k}] <= {v.hi})")
    src.emit(1, "return " + (" && ".join(checks) or "1") + ";")
    src.emit(0, "}")
    ends = "0" if spec.final is None else _truth(spec.final(g, p))
    src.emit(0, f"static int final(const sc *p) {{ (void)p; return {ends}; }}")
    src.emit(
        0, "static const mvfn MOVES[] = {" + "".join(f"mv_{j}, " for j in range(len(table))) + "0};"
    )
    try:
        reduce = canon_source(spec) if symmetry else IDENTITY
    except Untabulated as e:
        raise Refused(str(e)) from e
    head = [
        "#include <stdlib.h>",
        "#include <string.h>",
        "typedef signed char sc;",
        "typedef int (*mvfn)(const sc *, sc *, const unsigned char *, unsigned char *, long *);",
        f"#define NV {max(nslots, 1)}",
        f"#define NM {len(table)}",
        f"#define NS {len(state_props)}",
        f"#define NT {len(step_props)}",
        f"#define REDUCE {int(symmetry)}",
        f"#define RANKS {int(spec.ranks is not None)}",
    ]
    text = "\n".join(head) + "\n" + src.text() + reduce + SEARCH
    check: Any = None
    if symmetry:
        try:
            more, check = check_source(spec, g, p, moves, table)
        except Unchecked as e:
            check = str(e)
        else:
            text += more
    return Generated(text, table, moves, state_props, step_props, nslots, check)


def _outputs(spec: Spec, g: Gen, m: Move, p: _View, src: Source) -> dict[str, Any]:
    """The move's outputs as C locals ``o_<n>`` (read on ``p``); the view step properties read."""
    view: dict[str, Any] = {}
    count = 0

    def local(v: Any) -> Any:
        nonlocal count
        if isinstance(v, tuple):
            return tuple(local(x) for x in v)
        name = f"o_{count}"
        count += 1
        src.emit(1, f"int {name} = {_c(v)};")
        return CExpr(name, codegen.maybe_negative(v))

    for name, v in m.act.outputs(g, p, **m.kw).items():
        view[name] = local(v)
    return view


def _emit_move(
    spec: Spec,
    g: Gen,
    src: Source,
    j: int,
    m: Move,
    p: _View,
    q: _View,
    base: dict[str, int],
    step_props: list[Prop],
) -> bool:
    a = m.act
    guard = a.guard(g, p, **m.kw)
    if not isinstance(guard, Expr) and not guard:
        return False
    names = {v.name: v for v in spec.vars}
    src.emit(0, f"static int mv_{j}(const sc *p, sc *q, const unsigned char *need,")
    src.emit(0, "                unsigned char *res, long *err) {")
    src.emit(1, "(void)need; (void)res; (void)err;")
    if isinstance(guard, Expr):
        src.emit(1, f"if (!({guard.src})) return 0;")
    out = _outputs(spec, g, m, p, src)
    src.emit(1, "memcpy(q, p, NV);")
    src.emit(1, "long k, v;")
    src.emit(1, "(void)k; (void)v;")
    bad = f"{{ *err = {j} + 1; return -1; }}"
    writes: list[Write] = list(a.effect(g, p, **m.kw))
    for w in writes:
        var = names.get(w.field)
        if var is None:
            raise Refused(f"{a.name} writes {w.field!r}, not a variable")
        when = w.when
        if not isinstance(when, Expr) and not when:
            continue
        depth = 1
        if isinstance(when, Expr):
            src.emit(1, f"if ({when.src}) {{")
            depth = 2
        if isinstance(w.value, Expr):
            src.emit(depth, f"v = {w.value.src};")
            src.emit(depth, f"if (v < -128 || v > 127) {bad}")
            value = "(sc)v"
        elif -128 <= int(w.value) <= 127:
            value = _c(w.value)
        else:
            raise Refused(f"{a.name} writes {w.value!r} to {w.field}, wider than a byte")
        if w.key is None:
            if var.keys is not None:
                raise Refused(f"{a.name} writes the whole of keyed {w.field}")
            src.emit(depth, f"q[{base[w.field]}] = {value};")
        else:
            if var.keys is None:
                raise Refused(f"{a.name} writes scalar {w.field} by a key")
            if not isinstance(w.key, Expr):
                if not 0 <= int(w.key) < var.keys:
                    raise Refused(f"{a.name} writes {w.field}[{w.key}]: an unmasked NONE key")
                src.emit(depth, f"q[{base[w.field] + int(w.key)}] = {value};")
            else:
                src.emit(depth, f"k = {w.key.src};")
                src.emit(depth, f"if (k < 0 || k >= {var.keys}) {bad}")
                src.emit(depth, f"q[{base[w.field]} + k] = {value};")
        if depth == 2:
            src.emit(1, "}")
    src.emit(1, "ranks(q);")
    for n, x in enumerate(step_props):
        src.emit(1, f"if (need[{n}]) res[{n}] = {_truth(x.on_step(g, p, q, m, out))};")
    src.emit(1, "return 1;")
    src.emit(0, "}")
    return True


def _emit_ranks(spec: Spec, g: Gen, src: Source, q: _View, base: dict[str, int]) -> None:
    """``ranks(q)``: the spec's :class:`~mcp_inflight.model.declare.Ranks` applied to ``q`` in
    place, as ``Ranks.function`` applies it: every live condition read on ``q`` first, then
    each live time replaced by its rank among the live ones (by time, then stamp, then slot:
    the slots are met in that order and inserted after every equal time), every other time by
    0, and the clock by their number.  Without ranks, it changes nothing."""
    if spec.ranks is None:
        src.emit(0, "static void ranks(sc *q) { (void)q; }")
        return
    slots = [
        (base[name] + k, _truth(live(g, q, k)))
        for name, live in spec.ranks.stamps
        for k in range(spec.var(name).keys or 0)
    ]
    n = max(len(slots), 1)
    src.emit(0, "static void ranks(sc *q) {")
    src.emit(1, f"int at[{n}], tm[{n}], live[{n}], count = 0;")
    for j, (slot, live) in enumerate(slots):
        src.emit(1, f"live[{j}] = {live}; tm[{j}] = q[{slot}];")
    src.emit(1, f"static const int SLOT[{n}] = {{{', '.join(str(s) for s, _ in slots) or '0'}}};")
    src.emit(1, f"for (int j = 0; j < {len(slots)}; j++) {{")
    src.emit(2, "q[SLOT[j]] = 0;")
    src.emit(2, "if (!live[j]) continue;")
    src.emit(2, "int r = count++;")
    src.emit(2, "while (r > 0 && tm[at[r - 1]] > tm[j]) { at[r] = at[r - 1]; r--; }")
    src.emit(2, "at[r] = j;")
    src.emit(1, "}")
    src.emit(1, "for (int r = 0; r < count; r++) q[SLOT[at[r]]] = (sc)r;")
    src.emit(1, f"q[{base[spec.ranks.clock]}] = (sc)count;")
    src.emit(0, "}")
