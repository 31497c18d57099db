"""``requests_answered`` proved for any number of requests: a ranking argument checked by z3.

The explorer judges ``requests_answered`` on a bounded graph (``proofs/liveness.py``).  Here it
is proved for any number of ids and instances, in the style of Manna and Pnueli's rule for
response properties with *helpful actions*.  Fix one arbitrary request ``r`` of the client and
an arbitrary state of a lemma set that is itself proved inductive here (:func:`lemmas`: any
inductive invariant is a sound hypothesis; a stronger one is not needed).  While ``r`` is
pending (``proofs/liveness.py:pending``: sent by the client, on the wire, received or in
flight, its channel without a response), it has a *rank*, a pair of naturals compared
lexicographically:

* the lifecycle level of ``r`` (:data:`LEVELS`: on the wire 2, received 1, in flight 0);
* on stdio while ``r`` is on the wire, ``ts[r] - mu``, where ``mu`` is the send time of the
  earliest message still on the wire (a request or a cancel; one ordered channel), else 0.

Each state where ``r`` is pending falls in one *case* (``_Universe.cases``, each checked to
meet some state, so that none holds vacuously), and each case names its
*helpful* moves, each declared weakly fair and among those ``requests_answered`` rests on
(``proofs/liveness.py:RESTS_ON``):
the delivery of ``r`` on http, of the earliest message on stdio (the request or the cancel sent
at ``mu``); the server's decision on ``r`` once received (``admit`` or ``refuse``: in
``atomic`` one atomic step that claims the id or turns the duplicate away, so the two moves are
one fairness unit, see below); ``respond`` once in flight (in ``atomic`` a handler whose
elicitation is unanswered may still respond: its timeout).  Three validity queries per case:

(a) no move of any side raises the rank while ``r`` stays pending;
(b) a helpful move is enabled;
(c) a helpful move lowers the rank or ends the pendency; every other move keeps a helpful move
    enabled, lowers the rank, or ends the pendency.

Then no weakly fair run leaves ``r`` pending forever: the rank never rises, so it is eventually
constant; while constant, the case is constant (on stdio the earliest message too: send times
on the wire are distinct) and by (b) and (c) a helpful move stays enabled,
so by weak fairness one is taken, and it lowers the rank or ends the pendency; the rank is a
well-founded pair, so the pendency ends.  The client and the rogue owe nothing (their moves are
only checked not to hurt), nor does a POST stream breaking (it can only end the pendency).

Fairness unit: weak fairness is assumed of each move of the server and the wire, except that a
received request's ``admit`` and ``refuse`` count as *one* move (the server deciding on it).
With moves apart, and unboundedly many requests, a rogue could starve ``r``: admit a duplicate
of ``r``'s id whenever it is free, release it, and again, so that neither move on ``r`` stays
enabled; the explorer's bounded graphs cannot show that (a run sends finitely many requests).
The case table fails (b) and (c) without the union (tests/test_ranking.py).

This module reads the model's actions through ``proofs/symbolic.py`` and adds no rule.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from mcp_inflight.model.auxiliary import AUX
from mcp_inflight.model.config import Config
from mcp_inflight.model.eventually import PENDING, fair_actions, is_fair
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import Cmsg, State
from mcp_inflight.model.trace import changes, describe_state, inst_name
from mcp_inflight.proofs import symbolic as sym

#: The rank's first component: the lifecycle level of the pending request.
LEVELS: dict[Life, int] = {Life.SENT: 2, Life.RECEIVED: 1, Life.IN_FLIGHT: 0}
#: Helpful moves by lifecycle state; ``"first"`` is the earliest message on stdio's channel.
HELPFUL: dict[Life, tuple[str, ...]] = {
    Life.SENT: ("arrive",),
    Life.RECEIVED: ("admit", "refuse", "reject"),
    Life.IN_FLIGHT: ("respond",),
}
#: Query budget (z3 resource units, in millions) and a wall-clock backstop (seconds).
BUDGET = 200
TIMEOUT = 60.0
#: First attempt at an obligation, unbounded, before a small failing case is looked for.
QUICK = 0.5
#: Finite universes (instances, ids) tried, smallest first, to show a failing case.
UNIVERSES = ((1, 1), (2, 1), (2, 2), (3, 2))


def distinct_times(b: Any, s: Any, c: Config) -> Any:
    """stdio: two messages on the wire were sent at different times (every send takes the
    clock and advances it), so the earliest one is unique."""

    def on_wire(q: Any) -> list[tuple[Any, Any]]:
        return [(s.life[q] == Life.SENT, s.ts[q]), (s.cmsg[q] == Cmsg.WIRE, s.cts[q])]

    def pair(p: Any, q: Any) -> Any:
        parts = []
        for n, (wp, tp) in enumerate(on_wire(p)):
            for m, (wq, tq) in enumerate(on_wire(q)):
                apart = [p != q] if n == m else []  # a request and its own cancel differ too
                parts.append(b.Implies(b.And(wp, wq, *apart), tp != tq))
        return b.And(*parts)

    return b.ForAll("inst", lambda p: b.ForAll("inst", lambda q: pair(p, q)))


@dataclass(frozen=True)
class Lemma:
    name: str
    fn: Any


def no_server_request(b: Any, s: Any, c: Config) -> Any:
    """Where the server sends no request to the client (2026-07-28), no handler waits on one."""
    return b.ForAll("id", lambda k: s.waiter[k] == NONE)


def lemmas(cfg: Config) -> list[Lemma]:
    """The inductive invariant the ranking argument assumes (checked inductive by :func:`rank`):
    on stdio the send clock's facts, where no server request exists that none is pending."""
    out = []
    if cfg.stdio:
        out += [
            Lemma("clock_ahead", AUX["clock_ahead"].fn),
            Lemma("distinct_times", distinct_times),
        ]
    if not cfg.rev2025:
        out.append(Lemma("no_server_request", no_server_request))
    return out


@dataclass
class Failure:
    """A condition that does not hold, with the state (and move) that breaks it."""

    condition: str  # "lemma", "vacuous", "a", "b" or "c"
    case: str
    action: str | None
    detail: str
    pre: dict[Any, Any] | None = None
    post: dict[Any, Any] | None = None
    changes: dict[Any, Any] | None = None

    def to_json(self) -> dict[Any, Any]:
        return dict(self.__dict__)

    def __str__(self) -> str:
        mv = f", move {self.action}" if self.action else ""
        return f"({self.condition}) case {self.case}{mv}: {self.detail}"


@dataclass
class Verdict:
    cfg: Config
    proved: bool = False
    failures: list[Failure] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    note: str = ""  # why the argument does not apply (then ``status`` is ``n/a``)
    queries: int = 0
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if self.note:
            return "n/a"
        if self.unknown:
            return "unknown"
        return "proved" if self.proved else "fails"

    def to_json(self) -> dict[Any, Any]:
        return {
            "design": self.cfg.design.name,
            "revision": self.cfg.revision,
            "transport": self.cfg.transport,
            "status": self.status,
            "failures": [f.to_json() for f in self.failures],
            "unknown": list(self.unknown),
            **({"note": self.note} if self.note else {}),
            "queries": self.queries,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Case:
    name: str
    life: Life
    cond: Any  # z3 Boolean on the pre-state (beyond life[r] == life)
    helpful: tuple[tuple[str, Any], ...]  # (action name, instance)


class _Universe:
    """The terms of the argument on one backend: unbounded (``b.domains is None``) or over a
    finite universe of instances and ids (to show a failing case as a small state)."""

    def __init__(
        self,
        cfg: Config,
        levels: dict[Life, int],
        helpful: dict[Life, tuple[str, ...]],
        b: sym.Symbolic,
        tag: str,
    ):
        self.cfg = cfg
        self.levels = levels
        self.helpful = helpful
        self.b = b
        if b.domains is None:
            self.pre = sym.fresh_state(tag)
        else:
            self.pre = sym.fresh_finite_state(tag, len(b.domains["inst"]), len(b.domains["id"]))
        self.tag = tag
        self.r = z3.Int(f"{tag}.r")
        self.mu = z3.Int(f"{tag}.mu")  # stdio: the send time of the earliest message on the wire
        self.e = z3.Int(f"{tag}.e")  # ... and its instance
        self.e_cancel = z3.Bool(f"{tag}.e_is_cancel")  # ... which is that instance's cancel
        self.acts = {a.name: a for a in actions_for(cfg)}
        self._moves: dict[str, tuple[Any, ...]] = {}
        self._levels: dict[int, Any] = {}

    # -- the pieces of the argument
    def pending(self, s: Any) -> Any:
        return z3.And(
            z3.Not(s.rogue[self.r]),
            sym.to_bool(self.b.In(s.life[self.r], PENDING)),
            z3.Not(s.got_resp[self.r]),
        )

    def level(self, s: Any) -> Any:
        if id(s) not in self._levels:
            self._levels[id(s)] = (s, self._level(s))
        return self._levels[id(s)][1]

    def _level(self, s: Any) -> Any:
        term: Any = z3.IntVal(0)
        for life, n in sorted(self.levels.items(), key=lambda kv: -kv[1]):
            term = z3.If(s.life[self.r] == life, n, term)
        return term

    def wire_at_least(self, s: Any, strict: bool) -> Any:
        """Every message on the wire in ``s`` was sent at ``mu`` or later (strictly later)."""
        b = self.b

        def ok(t: Any) -> Any:
            return t > self.mu if strict else t >= self.mu

        return sym.to_bool(
            b.ForAll(
                "inst",
                lambda q: b.And(
                    b.Implies(s.life[q] == Life.SENT, ok(s.ts[q])),
                    b.Implies(s.cmsg[q] == Cmsg.WIRE, ok(s.cts[q])),
                ),
            )
        )

    def mu_defined(self) -> Any:
        """``mu`` is the earliest send time on the wire and ``e`` its message."""
        s = self.pre
        return z3.And(
            sym.to_bool(sym.param_ok(self.b, "inst", self.e)),
            self.wire_at_least(s, strict=False),
            z3.If(
                self.e_cancel,
                z3.And(s.cmsg[self.e] == Cmsg.WIRE, s.cts[self.e] == self.mu),
                z3.And(s.life[self.e] == Life.SENT, s.ts[self.e] == self.mu),
            ),
        )

    def ordered_sent(self) -> bool:
        return self.cfg.stdio and Life.SENT in self.levels

    def lower(self, post: Any, strict: bool) -> Any:
        """The rank of ``post`` is below (``strict``) or at most that of the pre-state."""
        lp, lq = self.level(self.pre), self.level(post)
        same = lq == lp
        if self.ordered_sent():
            # ts[r] - mu: r's send time no later, the earliest message on the wire no earlier
            later = z3.And(post.ts[self.r] <= self.pre.ts[self.r], self.wire_at_least(post, strict))
            second = z3.Or(self.pre.life[self.r] != Life.SENT, later)
            if strict:
                second = z3.And(self.pre.life[self.r] == Life.SENT, second)
        else:
            second = z3.BoolVal(not strict)
        return z3.Or(lq < lp, z3.And(same, second))

    def cases(self) -> list[Case]:
        out = []
        for life, names in self.helpful.items():
            if life == Life.SENT and self.cfg.stdio:
                for cancel in (False, True):
                    kind = "cancel" if cancel else "request"
                    out.append(
                        Case(
                            f"{life.label}, earliest message a {kind}",
                            life,
                            self.e_cancel if cancel else z3.Not(self.e_cancel),
                            (("deliver_cancel" if cancel else "arrive", self.e),),
                        )
                    )
                continue
            out.append(Case(life.label, life, z3.BoolVal(True), tuple((n, self.r) for n in names)))
        return out

    def enabled(self, s: Any, helpful: tuple[tuple[str, Any], ...]) -> Any:
        parts = []
        for name, x in helpful:
            a = self.acts.get(name)
            if a is not None:
                parts.append(sym.to_bool(a.guard(self.b, s, self.cfg, x, None)))
        return z3.Or(*parts) if parts else z3.BoolVal(False)

    def is_helpful(self, name: str, q: Any, helpful: tuple[tuple[str, Any], ...]) -> Any:
        return z3.Or(*([q == x for n, x in helpful if n == name] or [z3.BoolVal(False)]))

    def move(self, a: Any) -> tuple[Any, ...]:
        """``a`` on the pre-state with symbolic arguments: (constraints, post, instance)."""
        if a.name not in self._moves:
            self._moves[a.name] = self._move(a)
        return self._moves[a.name]

    def _move(self, a: Any) -> tuple[Any, ...]:
        b = self.b
        q, i = z3.Int(f"{self.tag}.{a.name}.q"), z3.Int(f"{self.tag}.{a.name}.i")
        ip = i if "i" in a.params else None
        g, _, w = a.run(b, self.pre, self.cfg, q, ip)
        post = sym.apply_writes(self.pre, w)
        params = [sym.to_bool(sym.param_ok(b, "inst", q)), sym.to_bool(g)]
        if ip is not None:
            params.append(sym.to_bool(sym.param_ok(b, "id", i)))
        return params, post, q

    # -- the obligations: key -> (formulas that must be unsatisfiable, post, move's instance)
    def obligations(
        self, lems: list[Lemma], want: set[Any] | None = None
    ) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """Every obligation, or those of ``want`` only."""
        b, cfg = self.b, self.cfg

        def need(cond: str, case: str, act: Any) -> bool:
            return want is None or (cond, case, act.name if act else None) in want

        out: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        init = (
            sym.initial_finite_state(*(len(b.domains[k]) for k in ("inst", "id")))
            if b.domains is not None
            else sym.initial_state()
        )
        typed = sym.to_bool(sym.well_typed(b, self.pre))
        inv = [typed] + [sym.to_bool(lm.fn(b, self.pre, cfg)) for lm in lems]
        for lm in lems:
            out[("lemma", lm.name, None)] = ([z3.Not(sym.to_bool(lm.fn(b, init, cfg)))], None, None)
        for a in self.acts.values():
            if not any(need("lemma", lm.name, a) for lm in lems):
                continue
            params, post, q = self.move(a)
            for lm in lems:
                bad = z3.Not(sym.to_bool(lm.fn(b, post, cfg)))
                out[("lemma", lm.name, a.name)] = (inv + params + [bad], post, q)
        hyps = inv + [sym.to_bool(sym.param_ok(b, "inst", self.r)), self.pending(self.pre)]
        cases = self.cases()
        covered = z3.Or(*[z3.And(self.pre.life[self.r] == c.life, c.cond) for c in cases])
        out[("b", "no case", None)] = (hyps + [z3.Not(covered)], None, None)
        for c in cases:
            here = hyps + [self.pre.life[self.r] == c.life, c.cond]
            if c.life == Life.SENT and self.ordered_sent():
                here.append(self.mu_defined())  # r is on the wire: the earliest message exists
            out[("sat", c.name, None)] = (here, None, None)  # satisfiable: not vacuous
            out[("b", c.name, None)] = (
                here + [z3.Not(self.enabled(self.pre, c.helpful))],
                None,
                None,
            )
            for a in self.acts.values():
                if not any(need(k, c.name, a) for k in ("a", "c-helpful", "c")):
                    continue
                params, post, q = self.move(a)
                step = here + params
                still = self.pending(post)
                raised = z3.Not(self.lower(post, strict=False))
                out[("a", c.name, a.name)] = (step + [still, raised], post, q)
                helpful = self.is_helpful(a.name, q, c.helpful)
                good = z3.Or(z3.Not(still), self.lower(post, strict=True))
                out[("c-helpful", c.name, a.name)] = (step + [helpful, z3.Not(good)], post, q)
                keeps = z3.Or(good, self.enabled(post, c.helpful))
                was = self.enabled(self.pre, c.helpful)  # (b) is checked on its own
                out[("c", c.name, a.name)] = (
                    step + [was, z3.Not(helpful), z3.Not(keeps)],
                    post,
                    q,
                )
        return out

    def render(self, model: z3.ModelRef, key: tuple[Any, ...], post: Any, q: Any) -> Failure:
        def val(t: Any) -> int:
            return int(model.eval(t, model_completion=True).as_long())

        cond, case, act = key
        if self.b.domains is not None:
            insts = list(self.b.domains["inst"])
            ids = list(self.b.domains["id"])
        else:
            insts = sorted({val(self.r)} | ({val(q)} if q is not None else set()))
            ids = sorted({val(self.pre.rid[x]) for x in insts})
        pre = sym.concrete_state(model, self.pre, insts, ids, State)
        post_c = None if post is None else sym.concrete_state(model, post, insts, ids, State)
        names = {x: inst_name(n) for n, x in enumerate(insts)}
        r_name = names.get(val(self.r), "?")
        mv = None if act is None or q is None else f"{act}({names.get(val(q), '?')})"
        what = {
            "lemma": "the lemma does not hold initially" if act is None else "not preserved",
            "a": f"the move raises {r_name}'s rank while it stays pending",
            "b": f"no helpful move is enabled while {r_name} is pending",
            "c": f"the move neither keeps a helpful move enabled, nor lowers {r_name}'s rank, "
            f"nor ends its pendency",
            "c-helpful": f"the helpful move neither lowers {r_name}'s rank nor ends its pendency",
        }[cond]
        return Failure(
            cond.split("-")[0],
            case,
            mv,
            what,
            describe_state(pre),
            None if post_c is None else describe_state(post_c),
            None if post_c is None else changes(pre, post_c),
        )


def _solver(quick: bool) -> z3.Solver:
    s = z3.Solver()
    s.set("rlimit", BUDGET * 1_000_000)
    s.set("timeout", int((QUICK if quick else TIMEOUT) * 1000))
    return s


def _run(cfg: Config, levels: dict[Life, int], helpful: dict[Life, tuple[str, ...]]) -> Verdict:
    t0 = time.monotonic()
    v = Verdict(cfg)
    if cfg.design.claim == "split":
        v.note = (
            "the case table is for a claim in one step; a split claim has steps it does not name"
        )
        return v
    if cfg.rev2025:
        v.note = (
            "a handler withdraws each of its waiters before it responds, and the rank has no "
            "component for how many it has (any number, over unboundedly many server ids); the "
            "explorer's requests_answered covers 2025-11-25 at its bounds"
        )
        return v
    acts = {a.name: a for a in actions_for(cfg)}
    fair = fair_actions("requests_answered", cfg)
    for names in helpful.values():
        for n in names:
            if n in acts and (not is_fair(acts[n]) or n not in fair):
                raise ValueError(f"helpful move {n} is not covered by fairness")
    lems = lemmas(cfg)
    top = _Universe(cfg, levels, helpful, sym.Symbolic(), "u")
    finite: dict[tuple[Any, ...], _Universe] = {}

    def small(n: int, m: int, key: tuple[Any, ...]) -> tuple[_Universe, tuple[Any, ...]]:
        if (n, m) not in finite:
            finite[(n, m)] = _Universe(
                cfg, levels, helpful, sym.Symbolic({"inst": range(n), "id": range(m)}), f"f{n}{m}"
            )
        U = finite[(n, m)]
        return U, U.obligations(lems, {key})[key]

    obligations = top.obligations(lems)
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for key in [k for k in obligations if k[0] == "sat"]:
        _, ob = small(2, 2, key)  # every case meets a state (one that meets none proves nothing)
        s = _solver(quick=False)
        s.add(*ob[0])
        obligations.pop(key)
        v.queries += 1
        if s.check() != z3.sat:
            v.failures.append(Failure("vacuous", key[1], None, "no state of 2 ids x 2 instances"))
    for key in obligations:
        groups.setdefault(key[:2], []).append(key)
    todo = []
    for keys in groups.values():  # one query per condition and case first, then one per move
        if len(keys) > 1:
            s = _solver(quick=True)
            s.add(z3.Or(*[z3.And(*obligations[k][0]) for k in keys]))
            v.queries += 1
            if s.check() == z3.unsat:
                continue
        todo += keys
    for key in todo:
        s = _solver(quick=True)
        s.add(*obligations[key][0])
        v.queries += 1
        if s.check() == z3.unsat:
            continue
        for n_inst, n_id in UNIVERSES:  # a failing case on the smallest universe that has one
            U, (fs, post, q) = small(n_inst, n_id, key)
            s = _solver(quick=False)
            s.add(*fs)
            v.queries += 1
            if s.check() == z3.sat:
                v.failures.append(U.render(s.model(), key, post, q))
                break
        else:  # none small: the unbounded obligation decides
            s = _solver(quick=False)
            s.add(*obligations[key][0])
            v.queries += 1
            res = s.check()
            if res == z3.sat:
                v.failures.append(top.render(s.model(), key, None, None))
            elif res == z3.unknown:
                v.unknown.append(f"{key}: {s.reason_unknown()}")
    v.proved = not v.failures and not v.unknown
    v.seconds = time.monotonic() - t0
    return v


def rank(
    cfg: Config,
    levels: dict[Life, int] | None = None,
    helpful: dict[Life, tuple[str, ...]] | None = None,
) -> Verdict:
    """The ranking argument for ``requests_answered`` on ``cfg``, for any number of ids and
    instances: ``proved``, or every failing condition with its state and move."""
    return _run(cfg, LEVELS if levels is None else levels, helpful or HELPFUL)


def rank_all(cfgs: list[Config]) -> list[Verdict]:
    """One verdict per configuration (profile), in the order given."""
    return [rank(c) for c in cfgs]
