"""The model's server-side actions, generated as Python for the runtime state of the core.

The core (``impl/core.py``) can run the model's actions two ways on the same runtime state:
through the concrete backend (``model.logic.Concrete``: every guard and effect re-evaluated
call by call, building ``Write`` records) or through code generated here from the very same
functions.  Generation calls each action of ``model/session.py`` once per profile with a
code-producing logic backend (the generator of ``model/codegen.py``) and a view of
the runtime state whose reads are source text: ``s.life[r]`` becomes ``life.get(r, 0)``, a ghost
or wire field becomes its default (the core never stores them, so the constant folds away),
``ForAll("inst", ...)`` becomes ``all(... for q in life)`` over the live instances, and a
quantifier over ids runs over the ids of the registries (over one registry's keys alone when
its body reads the id only there, with the body's value at that registry's default standing
for every other id).  The writes become assignments into the runtime tables, every key and
value computed before the first is applied, as ``model.logic`` specifies.  The client's send and
the model's ``arrive`` and ``admit``, which the core takes in a row for every request, are also
generated as one function (``arrival``), their bodies in turn.  Nothing here states a rule; the
text of every guard and effect comes from ``model/``.

``tests/test_core.py`` checks that the generated actions and the model's own (``Concrete`` with
``apply_writes``) agree on every transition of explored state spaces: guard, output, post-state.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import count
from typing import Any

from mcp_inflight.model.codegen import Expr, Gen, compile_source, is_false, lift, maybe_negative
from mcp_inflight.model.config import Config
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.session import ACTION, SERVER_ACTIONS, SERVER_EFFECTS, on_cancel
from mcp_inflight.model.session_state import FIELDS

#: The keyed fields the core stores (the rest are ghost or wire fields, read as their default).
STORED = tuple(f.name for f in FIELDS if f.key is not None and not (f.ghost or f.wire))
#: The scalar fields the core stores (attributes of the runtime state, ``S.<name>``).
SCALARS = tuple(f.name for f in FIELDS if f.key is None and not (f.ghost or f.wire))
_DEFAULT: dict[str, Any] = {f.name: f.default for f in FIELDS}
_SORT = {f.name: f.sort for f in FIELDS}


class _Field:
    __slots__ = ("name",)

    def __init__(self, name: Any) -> None:
        self.name = name

    def __getitem__(self, k: Any) -> Any:
        return Expr(
            f"T_{self.name}.get({lift(k)}, {int(_DEFAULT[self.name])!r})",
            _SORT[self.name] == "inst?",
        )


class _Fixed:
    """A ghost or wire field: always its default (the core does not keep it)."""

    __slots__ = ("default",)

    def __init__(self, default: Any) -> None:
        self.default = default

    def __getitem__(self, k: Any) -> Any:
        return self.default


class RuntimeView:
    """The runtime state as the model reads it, producing source over the tables ``T_<field>``."""

    def __init__(self) -> None:
        for f in FIELDS:
            if f.name in STORED:
                setattr(self, f.name, _Field(f.name))
            elif f.name in SCALARS:
                setattr(self, f.name, Expr(f"S.{f.name}", False))
            elif f.key is None:
                setattr(self, f.name, f.default)
            else:
                setattr(self, f.name, _Fixed(f.default))


class RuntimeGen(Gen):
    """The source-producing logic with quantifiers over what is live at run time."""

    def __init__(self) -> None:
        super().__init__({})
        self._names = count()

    def _domain(self, sort: Any) -> Any:
        return (
            "T_life"
            if sort == "inst"
            else "(*T_inflight, *T_stream, *T_waiter)"  # a union: all() and any() read it once
        )

    def ForAll(self, sort: Any, fn: Any) -> Any:
        v = f"q{next(self._names)}"
        body = fn(Expr(v, False))
        if not isinstance(body, Expr):
            return True if body else Expr(f"(not {self._domain(sort)})", False)
        narrow = _narrowed(sort, v, body.src)
        if narrow is not None:
            # over the ids of the registries the body reads, and, for every other id (where
            # each of those reads gives its default), the body at defaults
            read, absent, others = narrow
            rest = f"all({v} in {read} for {v} in ({others}))" if others else "True"
            return Expr(
                f"((not {read} or all({body.src} for {v} in {read})) and ({absent} or {rest}))",
                False,
            )
        return Expr(f"all({body.src} for {v} in {self._domain(sort)})", False)

    def Exists(self, sort: Any, fn: Any) -> Any:
        v = f"q{next(self._names)}"
        body = fn(Expr(v, False))
        if not isinstance(body, Expr):
            return Expr(f"bool({self._domain(sort)})", False) if body else False
        narrow = _narrowed(sort, v, body.src)
        if narrow is not None:
            read, absent, others = narrow
            rest = f"any({v} not in {read} for {v} in ({others}))" if others else "False"
            return Expr(
                f"((bool({read}) and any({body.src} for {v} in {read})) or ({absent} and {rest}))",
                False,
            )
        return Expr(f"any({body.src} for {v} in {self._domain(sort)})", False)


#: the registries whose keys make up the domain of the sort ``id`` at run time
_ID_TABLES = ("inflight", "stream", "waiter")


def _narrowed(sort: Any, v: str, src: str) -> tuple[str, str, str] | None:
    """A quantifier over ids whose body reads the id ``v`` only as a key of one registry
    (``T_x.get(v, d)``): (the domain to iterate, that registry; the body's source with every
    such read replaced by its default ``d``, its value at every id absent from that registry;
    the other registries of the domain, as source).  None when the body uses ``v`` otherwise.
    An id absent from ``T_x`` reads ``d`` there, so the body is the same at every such id, and
    the quantifier over the whole domain is the one over ``T_x``'s keys combined with that
    value when the domain holds an id that ``T_x`` does not."""
    if sort != "id":
        return None
    reads = list(re.finditer(rf"\bT_(\w+)\.get\({v}, (-?\d+)\)", src))
    tables = {m.group(1) for m in reads}
    if len(tables) != 1 or len(re.findall(rf"\b{v}\b", src)) != len(reads):
        return None
    (table,) = tables
    if table not in _ID_TABLES:
        return None
    absent = src
    for m in reads:
        absent = absent.replace(m.group(0), m.group(2))
    others = ", ".join(f"*T_{t}" for t in _ID_TABLES if t != table)
    return f"T_{table}", absent, others


#: source that names a local of a generated function or is a constant
_SIMPLE = re.compile(r"(?:r|i|conn|o_t|o_d|g\d+|-?\d+|True|False)\Z")


def _writes(lines: Any, writes: Any, ind: Any) -> None:
    """Source applying ``writes``: all keys, values and conditions first, then the assignments."""
    plan = []
    for n, w in enumerate(writes):
        if (w.field not in STORED and w.field not in SCALARS) or is_false(w.when):
            continue
        k, v = f"k{n}", f"v{n}"
        # a key or value that is a local or a constant is used as it is (no write changes it);
        # anything else is computed first, from the state before the writes
        if w.key is not None:
            src = lift(w.key)
            if _SIMPLE.match(src):
                k = src
            else:
                lines.append(f"{ind}{k} = {src}")
        src = lift(w.value)
        if _SIMPLE.match(src):
            v = src
        else:
            lines.append(f"{ind}{v} = {src}")
        cond = None
        if isinstance(w.when, Expr):
            cond = f"c{n}"
            lines.append(f"{ind}{cond} = {w.when.src}")
        plan.append((w, k, v, cond))
    for w, k, v, cond in plan:
        inner = ind
        if cond is not None:
            lines.append(f"{ind}if {cond}:")
            inner = ind + "    "
        if w.key is None:
            lines.append(f"{inner}S.{w.field} = {v}")
            continue
        if isinstance(w.key, Expr) and w.key.maybe_neg:
            lines.append(f"{inner}if {k} == {NONE}:")
            lines.append(
                f"{inner}    raise ValueError('write to {w.field}[NONE]: an unmasked NONE key (model bug)')"
            )
        default = int(_DEFAULT[w.field])
        if not isinstance(w.value, Expr):
            if w.value == _DEFAULT[w.field]:
                lines.append(f"{inner}T_{w.field}.pop({k}, None)")
            else:
                lines.append(f"{inner}T_{w.field}[{k}] = {v}")
        else:
            lines.append(f"{inner}if {v} == {default}:")
            lines.append(f"{inner}    T_{w.field}.pop({k}, None)")
            lines.append(f"{inner}else:")
            lines.append(f"{inner}    T_{w.field}[{k}] = {v}")
    if not plan:
        lines.append(f"{ind}pass")


#: a table read whose key is the action's argument, a constant or a hoisted read (never a
#: quantifier's variable or a local computed later in the function)
_READ = re.compile(r"\bT_\w+\.get\((?:r|i|conn|g\d+|-?\d+), -?\d+\)")


def _hoist_reads(body: list[str], ind: str) -> list[str]:
    """``body`` (one function's lines) with each table read that it makes more than once
    computed once, first, into a local.  Sound because every read of a generated function comes
    before its first write (guard, outputs, then the writes' keys and values, then the
    assignments), and a read has no effect; innermost reads first, so ``T_stream.get(T_rid.get(r,
    0), -1)`` becomes one local over another."""
    text = "\n".join(body)
    hoisted: list[str] = []
    while True:
        seen: dict[str, int] = {}
        for m in _READ.finditer(text):
            seen[m.group()] = seen.get(m.group(), 0) + 1
        repeated = [e for e, n in seen.items() if n > 1]
        if not repeated:
            break
        for e in repeated:
            name = f"g{len(hoisted)}"
            hoisted.append(f"{ind}{name} = {e}")
            text = text.replace(e, name)
    return hoisted + text.split("\n") if hoisted else body


def source(cfg: Config) -> str:
    """The generated module for ``cfg``: ``bind(tables) -> {name: function}``."""
    s = RuntimeView()
    r, i = Expr("r", False), Expr("i", False)
    args = ", ".join(["S"] + [f"T_{n}" for n in STORED])
    lines = [f"def bind({args}):", "    out = {}"]
    bodies: dict[str, list[str]] = {}  # the body of each action taken with an effect
    for name in SERVER_ACTIONS:
        a = ACTION[name]
        if not a.applies(cfg):
            lines += [
                f"    def act_{name}(r, i=None):",
                "        return False, None",
                f"    out[{name!r}] = act_{name}",
            ]
            continue
        b = RuntimeGen()
        guard = a.guard(b, s, cfg, r, i, server=True)
        outputs = a.output(b, s, cfg, r, i)
        lines.append(f"    def act_{name}(r, i=None):")
        if is_false(guard):
            lines += ["        return False, None", f"    out[{name!r}] = act_{name}"]
            continue
        body: list[str] = []
        if isinstance(guard, Expr):
            body.append(f"        if not {guard.src}:")
            body.append("            return False, None")
        names = {}
        for kind, (t, d) in outputs.items():
            body.append(f"        o_t = {lift(t)}")
            body.append(f"        o_d = {lift(d)}")
            names[kind] = (Expr("o_t", maybe_negative(t)), Expr("o_d", False))
        if len(names) > 1:
            raise ValueError(f"{name}: more than one output kind; the core expects at most one")
        writes = a.effect(b, s, cfg, r, i, names)
        _writes(body, writes, "        ")
        body.append("        return True, " + ("(o_t, o_d)" if names else "None"))
        body = _hoist_reads(body, "        ")
        bodies[name] = body
        lines += body
        lines.append(f"    out[{name!r}] = act_{name}")
    for short, name in SERVER_EFFECTS.items():
        a = ACTION[name]
        b = RuntimeGen()
        lines.append(f"    def eff_{short}(r, i=None):")
        body = []
        _writes(body, a.effect(b, s, cfg, r, i, {}), "        ")
        bodies[short] = body
        lines += body
        lines.append(f"    out[{short!r}] = eff_{short}")
    lines += _arrival(bodies)
    b = RuntimeGen()
    tgt, hit, writes = on_cancel(b, s, cfg, i, Expr("conn", False))
    lines.append("    def act_on_cancel(i, conn):")
    body = [f"        tgt = {lift(tgt)}", f"        hit = {lift(hit)}"]
    _writes(body, writes, "        ")
    body.append("        return tgt, hit")
    lines += _hoist_reads(body, "        ")
    lines.append("    out['on_cancel'] = act_on_cancel")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


#: the steps of a request's arrival, in order: the client's send, then ``arrive`` and ``admit``
ARRIVAL = ("send", "arrive", "admit")


def _arrival(bodies: dict[str, list[str]]) -> list[str]:
    """``arrival(r, key)``: the steps of :data:`ARRIVAL` as one function, each step's generated
    body in turn (each reads the state its predecessors wrote, as separate calls would); it
    returns how many of ``arrive`` and ``admit`` were taken (0, 1 or 2), stopping at the first
    whose guard is false.  Left out (the core then calls the steps one by one) when a step has
    no body here (it does not apply to the profile), has an output, or reads its second
    argument (which the core passes as None to ``arrive`` and ``admit``)."""
    parts = [bodies.get(name) for name in ARRIVAL]
    send, arrive, admit = parts
    if send is None or arrive is None or admit is None:
        return []
    out = ["    def arrival(r, i):", *send]
    for taken, body in enumerate((arrive, admit)):
        if body[-1] != "        return True, None" or any(re.search(r"\bi\b", ln) for ln in body):
            return []
        for ln in body[:-1]:
            if ln.strip() == "return False, None":
                ln = ln.replace("return False, None", f"return {taken}")
            elif "return" in ln:
                return []
            out.append(ln)
    out += ["        return 2", "    out['arrival'] = arrival"]
    return out


@cache
def binder(cfg: Config) -> Any:
    """``bind(*tables)`` for ``cfg`` (generated and compiled once per profile)."""
    src = source(cfg)
    return compile_source(src, f"<mcp-inflight runtime actions: {cfg.label}>")["bind"]


def bind(cfg: Config, state: Any) -> dict:
    """The generated actions of ``cfg`` bound to a runtime state's tables."""
    return binder(cfg)(state, *(getattr(state, n) for n in STORED))
