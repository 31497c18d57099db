"""A code-generating reading of the model: the model's rules, specialised per run and compiled.

The guards, effects, outputs and properties of ``model/`` are Python functions over a logic
object ``b`` and a state read by indexing (``model/logic.py``).  :class:`Gen` is a third backend
for them, beside the concrete one and the symbolic one: its values are Python *expression
strings* over a flat state tuple ``s``.  Calling a rule once with ``Gen`` for a fixed
configuration and fixed action arguments ``(r, i)`` yields the source of that rule specialised
to them (quantifiers unrolled over the finite domains, configuration tests and constants folded
away); :func:`compile_config` joins these into one generated module per run and ``exec``s it.
Nothing here states a lifecycle rule: every guard, effect and property still comes from
``model/``.  ``tests/test_compiled.py`` checks that this reading and the concrete one
(``model.logic.Concrete`` with ``apply_writes``) agree on every transition of explored state
spaces.

The flat state is one tuple: each field of ``model.session.FIELDS`` in order, a keyed field
taking one slot per key.  Successor states are built by copying the tuple and applying the
writes in list order, as ``apply_writes`` does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import NONE, Write
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.session import (CMSG_WIRE, FIELDS, State, actions_for, domains, initial,
                                        settled)

# --- the flat layout -----------------------------------------------------------------------


class Layout:
    """Where each field of ``FIELDS`` lives in the flat tuple for a configuration.

    Instance-major: instance r's fields are one block ``[r*W, (r+1)*W)`` (in ``FIELDS`` order,
    with ``rid`` last so that a block without its id is one slice), then the id-keyed fields
    (``ids`` slots each), then the scalars.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        inst = [f for f in FIELDS if f.key == "inst" and f.name != "rid"]
        inst += [f for f in FIELDS if f.name == "rid"]
        self.inst_fields = tuple(f.name for f in inst)
        self.W = W = len(inst)
        self.base: dict[str, int] = {}
        self.stride: dict[str, int] = {}
        self.size: dict[str, int] = {}
        for off, f in enumerate(inst):
            self.base[f.name] = off
            self.stride[f.name] = W
            self.size[f.name] = cfg.requests
        pos = W * cfg.requests
        for f in FIELDS:
            if f.key == "inst":
                continue
            n = cfg.ids if f.key == "id" else 1
            self.base[f.name] = pos
            self.stride[f.name] = 1
            self.size[f.name] = n
            pos += n
        self.width = pos

    def pos(self, field: str, k: int = 0) -> int:
        return self.base[field] + k * self.stride[field]

    def flatten(self, s: State) -> tuple:
        out = [None] * self.width
        for f in FIELDS:
            v = getattr(s, f.name)
            if f.key is None:
                out[self.base[f.name]] = v
            else:
                for k, x in enumerate(v):
                    out[self.pos(f.name, k)] = x
        return tuple(out)

    def unflatten(self, t) -> State:
        vals = []
        for f in FIELDS:
            if f.key is None:
                vals.append(t[self.base[f.name]])
            else:
                vals.append(tuple(t[self.pos(f.name, k)] for k in range(self.size[f.name])))
        return State(*vals)


# --- the generating backend ----------------------------------------------------------------

def lift(x) -> str:
    """Python source for a value of the interface: an expression, a bool or an int."""
    if isinstance(x, Expr):
        return x.src
    if isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, int):
        return repr(int(x))
    raise TypeError(f"the model produced a value the generator cannot render: {x!r}")


def _neg(x) -> bool:
    """May this value be negative (``NONE``)?  Used to emulate tuple indexing with ``NONE``."""
    if isinstance(x, Expr):
        return x.maybe_neg
    return isinstance(x, int) and not isinstance(x, bool) and x < 0


class Expr:
    """A value known only when the generated code runs: its Python source over ``s``."""

    __slots__ = ("src", "maybe_neg")

    def __init__(self, src: str, maybe_neg: bool = True):
        self.src = src
        self.maybe_neg = maybe_neg

    def __bool__(self):
        raise TypeError("a model rule branched with a Python `if` on a state value; "
                        "rules may branch only on the configuration (model/logic.py)")

    def _bin(self, op, other, rev=False):
        a, c = (lift(other), self.src) if rev else (self.src, lift(other))
        return Expr(f"({a} {op} {c})", maybe_neg=False)

    def __eq__(self, o):  # type: ignore[override]
        return self._bin("==", o)

    def __ne__(self, o):  # type: ignore[override]
        return self._bin("!=", o)

    def __lt__(self, o):
        return self._bin("<", o)

    def __le__(self, o):
        return self._bin("<=", o)

    def __gt__(self, o):
        return self._bin(">", o)

    def __ge__(self, o):
        return self._bin(">=", o)

    def __add__(self, o):
        return Expr(f"({self.src} + {lift(o)})", self.maybe_neg or _neg(o))

    def __radd__(self, o):
        return Expr(f"({lift(o)} + {self.src})", self.maybe_neg or _neg(o))

    def __sub__(self, o):
        return Expr(f"({self.src} - {lift(o)})")

    __hash__ = None  # type: ignore[assignment]


def _index_src(base: int, stride: int, n: int, k) -> str:
    """Source of the flat position of key ``k`` (an expression) of a field."""
    if k.maybe_neg:
        # tuple indexing semantics of the concrete reading: s.f[-1] is the last slot
        idx = f"{k.src} % {n}"
        return f"{base} + ({idx}) * {stride}" if stride != 1 else f"{base} + {idx}"
    return f"{base} + {k.src} * {stride}" if stride != 1 else f"{base} + {k.src}"


class _FieldView:
    __slots__ = ("var", "base", "n", "sort", "stride", "unpacked")

    def __init__(self, var, base, n, sort, stride, unpacked=None):
        self.var, self.base, self.n, self.sort, self.stride = var, base, n, sort, stride
        self.unpacked = unpacked

    def __getitem__(self, k):
        neg = self.sort == "inst?"
        if isinstance(k, Expr):
            return Expr(f"{self.var}[{_index_src(self.base, self.stride, self.n, k)}]", neg)
        k = int(k)
        if not -self.n <= k < self.n:
            raise IndexError(f"key {k} out of range")
        pos = self.base + (k % self.n) * self.stride
        if self.unpacked:
            return Expr(f"{self.unpacked}{pos}", neg)
        return Expr(f"{self.var}[{pos}]", neg)

    def __len__(self):
        return self.n

    def __iter__(self):
        return (self[k] for k in range(self.n))


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
                setattr(self, f.name, _FieldView(var, b, layout.size[f.name], f.sort,
                                                    layout.stride[f.name], unpacked))


def unpack_line(layout: Layout, var: str = "s", prefix: str = "x") -> str:
    """``(x0, x1, ...) = s``: the slots a View with ``unpacked=prefix`` reads by name."""
    return "(" + ", ".join(f"{prefix}{k}" for k in range(layout.width)) + f",) = {var}"


class Gen:
    """The logic interface of ``model/logic.py`` producing Python source; constants fold."""

    symbolic = False

    def __init__(self, domains_: dict):
        self.domains = {k: tuple(v) for k, v in domains_.items()}

    @staticmethod
    def And(*xs):
        parts = []
        for x in xs:
            if isinstance(x, Expr):
                parts.append(x.src)
            elif not x:
                return False
        if not parts:
            return True
        if len(parts) == 1:
            return Expr(parts[0], False)
        return Expr("(" + " and ".join(parts) + ")", False)

    @staticmethod
    def Or(*xs):
        parts = []
        for x in xs:
            if isinstance(x, Expr):
                parts.append(x.src)
            elif x:
                return True
        if not parts:
            return False
        if len(parts) == 1:
            return Expr(parts[0], False)
        return Expr("(" + " or ".join(parts) + ")", False)

    @staticmethod
    def Not(x):
        if isinstance(x, Expr):
            return Expr(f"(not {x.src})", False)
        return not x

    @classmethod
    def Implies(cls, a, c):
        return cls.Or(cls.Not(a), c)

    @staticmethod
    def Ite(c, a, other):
        if not isinstance(c, Expr):
            return a if c else other
        return Expr(f"({lift(a)} if {c.src} else {lift(other)})", _neg(a) or _neg(other))

    @staticmethod
    def In(x, values):
        values = tuple(values)
        if not isinstance(x, Expr):
            return x in values
        if not values:
            return False
        if len(values) == 1:
            return Expr(f"({x.src} == {lift(values[0])})", False)
        return Expr(f"({x.src} in ({', '.join(lift(v) for v in values)},))", False)

    def ForAll(self, sort, fn):
        return self.And(*[fn(v) for v in self.domains[sort]])

    def Exists(self, sort, fn):
        return self.Or(*[fn(v) for v in self.domains[sort]])


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
    def args(self) -> dict:
        return {"r": self.r} if self.i is None else {"r": self.r, "i": self.i}


class _Src:
    def __init__(self):
        self.lines: list[str] = []

    def emit(self, depth: int, line: str):
        self.lines.append("    " * depth + line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _clock_source(lay: Layout, cfg: Config, src: _Src, var: str, depth: int):
    """stdio: ``model.session.canonical_clock`` on the flat tuple ``var`` (rebinds ``var``).

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
        src.emit(d, f"if {var}[{P('life', r)}] == {int(Life.SENT)}: "
                    f"_p.append(({var}[{P('ts', r)}], {P('ts', r)}))")
        src.emit(d, f"if {var}[{P('cmsg', r)}] == {CMSG_WIRE}: "
                    f"_p.append(({var}[{P('cts', r)}], {P('cts', r)}))")
    src.emit(d, "_p.sort()")
    src.emit(d, f"_c = list({var})")
    for r in range(n):
        src.emit(d, f"_c[{P('ts', r)}] = 0; _c[{P('cts', r)}] = 0")
    src.emit(d, "for _k, (_x, _at) in enumerate(_p):")
    src.emit(d + 1, "_c[_at] = _k")
    src.emit(d, f"_c[{CL}] = len(_p)")
    src.emit(d, f"{var} = tuple(_c)")


def _writes_source(lay: Layout, writes: list[Write], src: _Src, d: int, tag: str,
                   unpacked: str | None = None) -> None:
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
    if unpacked and all(cond is None and not check and pos is not None and pos.isdigit()
                        for _, pos, _, _, cond, check, _ in live):
        # every write lands on a fixed slot: build the successor as one tuple display
        slots = {int(pos): val for _, pos, _, val, _, _, _ in live}
        src.emit(d, "t = (" + ", ".join(slots.get(k, f"{unpacked}{k}")
                                        for k in range(lay.width)) + ",)")
        return
    src.emit(d, "n = list(s)")
    for f, pos, key_src, val, cond, check, n in live:
        dd = d
        if cond is not None:
            src.emit(dd, f"if {cond}:")
            dd += 1
        if check:
            src.emit(dd, f"if {key_src} < 0: raise ValueError('write to {f}[' + str({key_src}) + "
                         f"']: an unmasked NONE key (model bug)')")
        if pos is not None:
            src.emit(dd, f"n[{pos}] = {val}")
    src.emit(d, "t = tuple(n)")


class Compiled:
    """The generated functions of one configuration.

    ``expand(s)`` returns, for flat state ``s``, the list of ``(move index, successor, outputs,
    failed step properties)`` of every enabled move (successor already clock-canonical on stdio;
    outputs a tuple ``(t0, d0, t1, d1, ...)`` in the move's ``kinds`` order; failed step
    properties as indices into ``step_props``).  ``state_checks[j](s)`` evaluates state property
    ``state_props[j]``; ``settled(s)`` is the model's ``settled``.
    """

    def __init__(self, cfg: Config, properties=PROPERTIES):
        self.cfg = cfg
        self.layout = lay = Layout(cfg)
        b = Gen(domains(cfg))
        pre = View(lay, "s", unpacked="x")
        post = View(lay, "t")
        self._unpack = unpack_line(lay)
        props = [p for p in properties if p.applies(cfg)]
        self.step_props = [p for p in props if p.scope == "step"]
        self.state_props = [p for p in props if p.scope == "state"]
        self.moves: list[Move] = []
        src = _Src()
        src.emit(0, "def expand(s):")
        src.emit(1, self._unpack)
        src.emit(1, "res = []")
        for a in actions_for(cfg):
            for r in range(cfg.requests):
                for i in (range(cfg.ids) if "i" in a.params else (None,)):
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
        ns: dict = {}
        exec(compile(self.source, f"<compiled model: {cfg.label} {cfg.ids}x{cfg.requests}>",
                     "exec"), ns)
        self.expand = ns["expand"]
        self.settled = ns["settled"]
        self.clock = ns["clock"]
        self.state_checks = [ns[f"state_check_{j}"] for j in range(len(self.state_props))]

    def _move(self, b, pre, post, cfg, a, r, i, src: _Src):
        m = len(self.moves)
        guard = a.guard(b, pre, cfg, r, i)
        out = a.output(b, pre, cfg, r, i)
        kinds = tuple(out)
        self.moves.append(Move(m, a, r, i, kinds))
        if not isinstance(guard, Expr) and not guard:
            return
        src.emit(1, f"# {a.name} r={r} i={i}")
        d = 1
        if isinstance(guard, Expr):
            src.emit(d, f"if {guard.src}:")
            d += 1
        hoisted = {}
        flat_out = []
        for n, kind in enumerate(kinds):
            t_, d_ = out[kind]
            names = []
            for part, val in (("t", t_), ("d", d_)):
                if isinstance(val, Expr):
                    src.emit(d, f"o{part}{n} = {val.src}")
                    names.append(Expr(f"o{part}{n}", val.maybe_neg))
                else:
                    names.append(val)
            hoisted[kind] = tuple(names)
            flat_out.extend(lift(x) for x in names)
        writes = a.effect(b, pre, cfg, r, i, hoisted)
        _writes_source(self.layout, writes, src, d, "w", unpacked="x")
        if cfg.stdio:
            _clock_source(self.layout, cfg, src, "t", d)
        failed = []
        for j, p in enumerate(self.step_props):
            v = p.fn(b, pre, post, cfg, a, r, i, hoisted)
            if isinstance(v, Expr):
                failed.append((j, v.src))
            elif not v:
                failed.append((j, "False"))
        outs = "(" + "".join(x + ", " for x in flat_out) + ")"
        if failed:
            src.emit(d, "bad = []")
            for j, cond in failed:
                src.emit(d, f"if not {cond}: bad.append({j})")
            src.emit(d, f"res.append(({m}, t, {outs}, bad))")
        else:
            src.emit(d, f"res.append(({m}, t, {outs}, ()))")

    def event_function(self, pending: list[int]):
        """One function telling whether any of the state properties ``pending`` (indices into
        ``state_props``) has an event in ``s``: an invariant or hazard fails, a witness holds."""
        parts = []
        for j in pending:
            v = self._state_src[j]
            parts.append(f"({v})" if self.state_props[j].kind == "witness" else f"not ({v})")
        text = (f"def events(s):\n    {self._unpack}\n    return "
                + (" or ".join(parts) if parts else "False") + "\n")
        ns: dict = {}
        exec(compile(text, "<state events>", "exec"), ns)
        return ns["events"]

    def out_dict(self, move: Move, outs: tuple) -> dict:
        return {k: (outs[2 * n], outs[2 * n + 1]) for n, k in enumerate(move.kinds)}

    def initial(self) -> tuple:
        return self.clock(self.layout.flatten(initial(self.cfg)))


# --- symmetry on flat states ----------------------------------------------------------------

def canonical_source(cfg: Config, lay: Layout) -> str:
    """Source of ``canon(s) -> bytes``: a canonical name of the orbit of flat state ``s`` under
    renaming of instances and of ids.

    Every field of ``FIELDS`` takes part, by its key and sort: an instance's signature is its
    block of instance-keyed fields without its id, plus, for each id-keyed field naming an
    instance, whether that field holds this instance under its own id.  Ids are ordered first, by
    the sorted signatures of the sent instances under each id; then instances are ordered by
    signature and renamed id; every field is renamed accordingly and the result encoded as
    bytes.  The key is always a renaming of ``s`` (so distinct orbits never share a key: sound);
    ids or instances tied on their signatures are interchangeable, so every member of an orbit
    gets the same key (exact: one state per orbit).
    """
    n, ids, W = cfg.requests, cfg.ids, lay.W
    for f in FIELDS:
        if f.key == "inst" and (f.sort == "inst?" or (f.sort == "id" and f.name != "rid")):
            raise NotImplementedError(
                f"symmetry: per-instance field {f.name!r} of sort {f.sort!r} names another "
                "instance or an id; canonical_source must learn to rename it")
        if f.key is None and f.sort in ("inst?", "id"):
            raise NotImplementedError(
                f"symmetry: scalar field {f.name!r} of sort {f.sort!r} must be renamed; "
                "canonical_source must learn to rename it")
        if f.key == "id" and f.sort == "id":
            raise NotImplementedError(f"symmetry: id-keyed field {f.name!r} holds an id")
    P_ = lay.pos
    regs = [f.name for f in FIELDS if f.key == "id" and f.sort == "inst?"]
    others = [f.name for f in FIELDS if f.key == "id" and f.sort != "inst?"]
    scalars = [f.name for f in FIELDS if f.key is None]
    unsent = int(Life.UNSENT)
    src = _Src()
    src.emit(0, "def canon(s):")
    sent = (lambda r: f"s[{P_('life', r)}]") if unsent == 0 else \
        (lambda r: f"(s[{P_('life', r)}] != {unsent})")
    for r in range(n):
        src.emit(1, f"r{r} = s[{P_('rid', r)}]")
        flags = "".join(f"s[{lay.base[g]} + r{r}] == {r}, " for g in regs)
        src.emit(1, f"h{r} = s[{r * W}:{r * W + W - 1}] + ({flags})")

    def finish(depth, pi, prid):
        """Sort the instances under id renaming ``pi`` and return the encoded state."""
        gs = ", ".join(f"h{r} + ({prid(r)}, {r})" for r in range(n))
        src.emit(depth, f"o = sorted(({gs},))")
        src.emit(depth, f"sg = [{n}] * {n + 1}")
        for j in range(n):
            src.emit(depth, f"sg[o[{j}][-1]] = {j}")
        items = []
        for g in regs + others:
            for k_new in range(ids):
                x = f"s[{lay.base[g] + pi.index(k_new)}]"
                items.append(f"sg[{x}]" if g in regs else x)
        items += [f"s[{lay.base[g]}]" for g in scalars]
        src.emit(depth, "return bytes(" + " + ".join(f"o[{j}][:-1]" for j in range(n))
                 + f" + ({', '.join(items)},))")

    if ids == 1:
        finish(1, (0,), lambda r: f"r{r}")
    elif ids == 2:
        # order the two ids by the sorted signatures of their sent instances
        src.emit(1, "a = []; b = []")
        for r in range(n):
            src.emit(1, f"if {sent(r)}: (b if r{r} else a).append(h{r})")
        src.emit(1, "a.sort(); b.sort()")
        src.emit(1, "if b < a:")
        finish(2, (1, 0), lambda r: f"((1 - r{r}) if {sent(r)} else r{r})")
        finish(1, (0, 1), lambda r: f"r{r}")
    else:
        src.emit(1, "D = (" + "[], " * ids + ")")
        for r in range(n):
            src.emit(1, f"if {sent(r)}: D[r{r}].append(h{r})")
        for k in range(ids):
            src.emit(1, f"D[{k}].sort()")
        src.emit(1, "ko = sorted((" + "".join(f"(D[{k}], {k}), " for k in range(ids)) + "))")
        src.emit(1, f"P = [0] * {ids}")
        for j in range(ids):
            src.emit(1, f"P[ko[{j}][1]] = {j}")
        gs = ", ".join(f"h{r} + ((P[r{r}] if {sent(r)} else r{r}), {r})" for r in range(n))
        src.emit(1, f"o = sorted(({gs},))")
        src.emit(1, f"sg = [{n}] * {n + 1}")
        for j in range(n):
            src.emit(1, f"sg[o[{j}][-1]] = {j}")
        src.emit(1, f"R = [0] * {ids * (len(regs) + len(others))}")
        for m, g in enumerate(regs + others):
            for k in range(ids):
                x = f"s[{lay.base[g] + k}]"
                src.emit(1, f"R[{m * ids} + P[{k}]] = " + (f"sg[{x}]" if g in regs else x))
        tail = "".join(f"s[{lay.base[g]}], " for g in scalars)
        src.emit(1, "return bytes(" + " + ".join(f"o[{j}][:-1]" for j in range(n))
                 + f" + tuple(R) + ({tail}))")
    return src.text()


def decode_key(cfg: Config, lay: Layout, key: bytes) -> tuple:
    """The flat state a key of ``canonical_source`` names (the orbit's representative)."""
    n, ids, W = cfg.requests, cfg.ids, lay.W
    regs = [f.name for f in FIELDS if f.key == "id" and f.sort == "inst?"]
    others = [f.name for f in FIELDS if f.key == "id" and f.sort != "inst?"]
    scalars = [f.name for f in FIELDS if f.key is None]
    out = [0] * lay.width
    per = W + len(regs)
    for j in range(n):
        chunk = key[j * per:(j + 1) * per]
        out[j * W:j * W + W - 1] = chunk[:W - 1]
        out[lay.pos("rid", j)] = chunk[-1]
    at = n * per
    for g in regs + others:
        for k in range(ids):
            v = key[at]
            out[lay.base[g] + k] = (NONE if v == n else v) if g in regs else v
            at += 1
    for g in scalars:
        out[lay.base[g]] = key[at]
        at += 1
    return tuple(out)


def raw_source(lay: Layout) -> str:
    """Source of ``raw(s) -> bytes``: the state itself, encoded as bytes (every value + 1)."""
    return ("def raw(s):\n    return bytes((" +
            ", ".join(f"s[{k}] + 1" for k in range(lay.width)) + ",))\n")


def key_function(cfg: Config, lay: Layout, symmetry: bool):
    text = canonical_source(cfg, lay) if symmetry else raw_source(lay)
    ns: dict = {}
    exec(compile(text, f"<state key: {cfg.label}>", "exec"), ns)
    return ns["canon" if symmetry else "raw"]
