"""Promela from ``model/``: a backend of the state interface whose values are Promela expressions.

The rules of ``model/session.py`` and ``model/properties.py`` are Python functions over a logic
object ``b`` and a state read by indexing (``model/logic.py``).  Handed :class:`Promela` and a
:class:`StateView`, the very same functions return Promela expression text instead of Python
values, so the SPIN model below is generated from the one specification, not written again:

* every (action, r, i) of ``actions_for(cfg)`` becomes one ``d_step { guard -> effects }`` option
  of a single ``do`` loop in one process, so one SPIN state is one model state (the process
  never rests anywhere but at the ``do``);
* effects follow the semantics of a list of ``Write``: the fields the writes read are first
  copied to ``hidden`` pre-state variables (outside the state vector), every key, value and
  ``when`` is read from those copies, then the writes are applied in list order, each as a
  guarded assignment (an array read inside its own index, which SPIN does not accept, is read
  from a second copy);
* on stdio the explorer renumbers send times after every step (``canonical_clock`` in
  ``model/session_state.py``: a time becomes its rank among undelivered messages, the clock their
  number); the same renumbering is emitted in Promela after the writes.  It is the one piece of
  this file that is not read from the model's backend interface (it is plain Python there), so
  the state counts are its check;
* step properties are judged inside the ``d_step``, after the writes, with the pre-state copies
  as ``pre``, the live variables as ``post`` and the action's outputs computed on ``pre``;
* state properties (invariants, hazards, witnesses) are judged on the pre-state of every
  transition, and, through an extra ``timeout`` option, in every state where no action is
  enabled; that option also asserts ``settled`` (a state with nothing enabled that is not settled
  is a deadlock, as in the explorer) and leads back to the same state, so it adds no state.
  By default they are written once, as a C function in a ``c_code`` block that every ``d_step``
  calls (the same expressions over pan's ``now``), rather than spelled out in every ``d_step``,
  which would give gcc a third more code to compile.

Each property has its own ``assert`` over a ``hidden`` flag named after it: the first violation
fails ``assert(P_<name>)`` and sets the flag, so with ``pan -c0`` every property is reported at
most once and the search goes on to the end (a witness is "violated" when it is reached).
"""

from __future__ import annotations

import re
from typing import Any

from mcp_inflight.model import codegen
from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import Write
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import FIELDS, Cmsg, domains, initial, settled

# --- expressions --------------------------------------------------------------------------
# The generator of ``model/codegen.py`` with Promela's spelling of the operations.


class Expr(codegen.Expr):
    """A Promela expression (``&&``, ``||``, ``!``, ``(c -> a : b)``, booleans as 1/0)."""

    __slots__ = ()
    syntax = codegen.PROMELA

    @property
    def text(self) -> str:
        return self.src


def lit(x: Any) -> str:
    """Promela text of a value: an expression, an int (IntEnum included) or a bool."""
    return codegen.lift(x, codegen.PROMELA)


class Array:
    """A keyed field: ``a[k]`` is the Promela element (``k`` a Python int or an expression).

    SPIN rejects an array indexed by an expression that reads the same array
    (``rid[inflight[rid[0]]]``: "do not index an array with itself"); such a read goes to
    ``alias``, a second copy of the array, when there is one.
    """

    __slots__ = ("name", "size", "alias")

    def __init__(self, name: str, size: int, alias: str | None = None):
        self.name = name
        self.size = size
        self.alias = alias

    def __getitem__(self, k):
        if isinstance(k, Expr):
            if re.search(r"(?<![\w])" + self.name + r"\[", k.text):
                if self.alias is None:
                    raise ValueError(f"{self.name} indexed by itself ({k.text}) and no alias")
                return Expr(f"{self.alias}[{k.text}]")
            return Expr(f"{self.name}[{k.text}]")
        k = int(k)
        if not 0 <= k < self.size:
            raise IndexError(f"{self.name}[{k}]: a constant key out of range (an unmasked NONE?)")
        return Expr(f"{self.name}[{k}]")

    def __len__(self):
        return self.size

    def __iter__(self):
        return (self[k] for k in range(self.size))


class StateView:
    """The state read through Promela variables named ``<prefix><field>``."""

    def __init__(self, cfg: Config, prefix: str = "", alias_prefix: str | None = None):
        self._prefix = prefix
        for f in FIELDS:
            name = prefix + f.name
            if f.key is None:
                v: Any = Expr(name)
            else:
                alias = None if alias_prefix is None else alias_prefix + f.name
                v = Array(name, cfg.requests if f.key == "inst" else cfg.ids, alias)
            setattr(self, f.name, v)


def _is_const(x) -> bool:
    return not isinstance(x, codegen.Expr)


class Promela(codegen.Gen):
    """The logic interface of ``model/logic.py`` over Promela text.

    Python constants fold (``And(True, e)`` is ``e``), quantifiers unroll over the finite domain,
    ``&&``, ``||`` and ``(c -> a : b)`` short-circuit in pan's C, so a guarded read such as
    ``t != -1 && open[t]`` never indexes with -1.
    """

    symbolic = True
    expr = Expr


# --- the generated model ------------------------------------------------------------------

_TYPE = {
    "life": "byte",
    "id": "byte",
    "bool": "bool",
    "step": "byte",
    "sreq": "byte",
    "cmsg": "byte",
    "time": "byte",
    "inst?": "short",
}
_PRE = "p_"
_DEADLOCK = type("Deadlock", (), {"name": "deadlock"})
_ALIAS = "q_"  # a second pre-state copy, for an array read inside its own index


def _cond(x) -> str:
    return lit(x)


def _writes(ws: list[Write]) -> list[str]:
    out = []
    for w in ws:
        target = w.field if w.key is None else f"{w.field}[{lit(w.key)}]"
        assign = f"{target} = {lit(w.value)}"
        if _is_const(w.when):
            if w.when:
                out.append(assign + ";")
            continue
        out.append(f"if :: {lit(w.when)} -> {assign} :: else -> skip fi;")
    return out


def _check(name: str, holds) -> list[str]:
    """Report property ``name`` the first time ``holds`` is false."""
    if _is_const(holds):
        return (
            []
            if holds
            else [f"if :: !P_{name} -> assert(P_{name}); P_{name} = 1 :: else -> skip fi;"]
        )
    return [
        f"if :: !P_{name} && !({holds.text}) -> assert(P_{name}); P_{name} = 1 :: else -> skip fi;"
    ]


def _to_c(text: str) -> str:
    """A Promela expression over the live state as C over pan's state vector ``now``."""
    names = "|".join(f.name for f in FIELDS)
    text = re.sub(r"(?<![\w.])(" + names + r")\b", r"now.\1", text)
    return text.replace(" -> ", " ? ")


def _c_check(name: str, holds) -> list[str]:
    """The C form of :func:`_check`, for the state properties' one C function."""
    if _is_const(holds):
        return (
            []
            if holds
            else [f'if (!P_{name}) {{ P_{name} = 1; uerror("assertion violated P_{name}"); }}']
        )
    return [
        f"if (!P_{name} && !({_to_c(holds.text)})) {{ P_{name} = 1;"
        f' uerror("assertion violated P_{name}"); }}'
    ]


def _canonical_clock(cfg: Config) -> list[str]:
    """stdio: a send time becomes its rank among undelivered messages (model/session.py
    ``canonical_clock``); pending times are distinct, so the rank is the number of pending
    messages sent earlier."""
    if not cfg.stdio:
        return []
    n = cfg.requests
    sent = lambda q: f"(life[{q}] == {int(Life.SENT)})"  # noqa: E731
    wire = lambda q: f"(cmsg[{q}] == {int(Cmsg.WIRE)})"  # noqa: E731

    def rank(t):
        terms = []
        for q in range(n):
            terms.append(f"(({sent(q)} && ts[{q}] < {t}) -> 1 : 0)")
            terms.append(f"(({wire(q)} && cts[{q}] < {t}) -> 1 : 0)")
        return " + ".join(terms)

    lines = []
    for r in range(n):
        lines.append(f"c_ts[{r}] = ({sent(r)} -> ({rank(f'ts[{r}]')}) : 0);")
        lines.append(f"c_cts[{r}] = ({wire(r)} -> ({rank(f'cts[{r}]')}) : 0);")
    count = " + ".join(f"({sent(q)} -> 1 : 0) + ({wire(q)} -> 1 : 0)" for q in range(n))
    lines.append(f"clock = {count};")
    for r in range(n):
        lines.append(f"ts[{r}] = c_ts[{r}]; cts[{r}] = c_cts[{r}];")
    return lines


def _copy_pre(cfg: Config, body: list[str]) -> list[str]:
    """Copy to the pre-state variables exactly the fields the body reads from them."""
    text = "\n".join(body)
    out = []
    for prefix in (_PRE, _ALIAS):
        used = set(re.findall(r"\b" + prefix + r"(\w+)\b", text))
        for f in FIELDS:
            if f.name not in used:
                continue
            if f.key is None:
                out.append(f"{prefix}{f.name} = {f.name};")
            else:
                n = cfg.requests if f.key == "inst" else cfg.ids
                out.append(" ".join(f"{prefix}{f.name}[{k}] = {f.name}[{k}];" for k in range(n)))
    return out


def properties_for(cfg: Config, properties=PROPERTIES):
    return [p for p in properties if p.applies(cfg)]


def generate(cfg: Config, properties=PROPERTIES, embedded_c: bool = True) -> str:
    """The Promela text of ``cfg``: one process, one ``do``, one ``d_step`` per (action, r, i).

    ``embedded_c``: the state properties, judged in every ``d_step``, are written once as a C
    function (``c_code``) that every ``d_step`` calls, instead of being spelled out in each: the
    same expressions, a third less C for gcc to compile.  ``False`` gives pure Promela.
    """
    b = Promela(domains(cfg))
    cur = StateView(cfg)
    pre = StateView(cfg, _PRE, _ALIAS)
    props = properties_for(cfg, properties)
    state_props = [p for p in props if p.scope == "state"]
    step_props = [p for p in props if p.scope == "step"]

    def state_checks(view, check=_check):
        lines = []
        for p in state_props:
            v = p.fn(b, view, cfg)
            lines += check(p.name, b.Not(v) if p.kind == "witness" else v)
        return lines

    c_func = []
    if embedded_c and state_props:
        c_func = (
            ["c_code {", "  extern void (*uerror)(char *);", "  static void check_state(void) {"]
            + [f"    {x}" for x in state_checks(cur, _c_check)]
            + ["  }", "}"]
        )
        state_checks = lambda view: ["c_code { check_state(); };"]  # noqa: E731

    s0 = initial(cfg)
    decl = [f"/* {cfg.label}, ids={cfg.ids} requests={cfg.requests}: generated from model/ */"]
    for f in FIELDS:
        n = None if f.key is None else (cfg.requests if f.key == "inst" else cfg.ids)
        init = getattr(s0, f.name)
        v0 = init if n is None else init[0]
        if n is not None and any(x != v0 for x in init):
            raise ValueError(f"initial {f.name} is not uniform")
        dim = "" if n is None else f"[{n}]"
        decl.append(f"{_TYPE[f.sort]} {f.name}{dim} = {lit(v0)};")
        hidden_type = "int" if _TYPE[f.sort] == "short" else "byte"
        decl.append(f"hidden {hidden_type} {_PRE}{f.name}{dim};")
        if n is not None:
            decl.append(f"hidden {hidden_type} {_ALIAS}{f.name}{dim};")
    if cfg.stdio:
        decl.append(f"hidden byte c_ts[{cfg.requests}], c_cts[{cfg.requests}];")
    decl.append("hidden byte " + ", ".join(f"P_{p.name}" for p in props + [_DEADLOCK]) + ";")
    decl += c_func

    options = []
    for a in actions_for(cfg):
        for r in range(cfg.requests):
            for i in range(cfg.ids) if "i" in a.params else (None,):
                guard = a.guard(b, cur, cfg, r, i)
                if _is_const(guard) and not guard:
                    continue
                out = a.output(b, pre, cfg, r, i)
                writes = _writes(a.effect(b, pre, cfg, r, i, out))
                body = writes + _canonical_clock(cfg)
                checks = []
                for p in step_props:
                    checks += _check(p.name, p.fn(b, pre, cur, cfg, a, r, i, out))
                body = _copy_pre(cfg, body + checks) + body + checks
                label = f"{a.name} r={r}" + ("" if i is None else f" i={i}")
                g = "true" if _is_const(guard) else guard.text
                options.append(
                    f"  /* {label} */\n  :: d_step {{ {g} ->\n"
                    + "".join(f"       {x}\n" for x in state_checks(cur) + body)
                    + "     }"
                )
    idle = state_checks(cur) + _check(_DEADLOCK.name, settled(b, cur))
    options.append(
        "  /* nothing enabled: judge the state, then stay */\n  :: d_step { timeout ->\n"
        + "".join(f"       {x}\n" for x in idle)
        + "     }"
    )
    return (
        "\n".join(decl)
        + "\n\nactive proctype session() {\nend:\n  do\n"
        + "\n".join(options)
        + "\n  od\n}\n"
    )


__all__ = ["Expr", "Array", "StateView", "Promela", "generate", "properties_for", "lit"]
