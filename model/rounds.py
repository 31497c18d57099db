"""Input-required rounds (2026-07-28, SEP-2322) with a client-held ``requestState``, as a small model.

A handler that needs the client's input does not wait for it on 2026-07-28: the call is answered
``InputRequiredResult`` (its ``inputRequests`` and a ``requestState``), and the caller retries
the call under a new JSON-RPC id with ``inputResponses`` and the state it was given.  The server
keeps nothing between rounds: the answers so far travel in the state, so the state is a token
the server seals and the holder may forge, replay, or present on another call.

What is modelled (bounds: ``calls`` client calls, ``questions`` per client call, the server's
``max_rounds``, ``tokens`` state slots):

* calls ``c0..`` of the client, each with a handler that asks ``questions`` questions, one per
  round, and completes once all are answered; and one call of the **rogue** (the last), whose
  handler asks in every round (a handler with no end: only the server's bound stops it);
* ``start(c)``: the first request of call c; ``ask(c)``: the running handler asks, so the server
  mints a state (a token slot: the call, the round, the answers so far) and answers
  InputRequiredResult, or, past ``max_rounds``, ends the call with an error; ``complete(c)``;
* ``retry(c)``: the caller presents the state it holds with its answer; accepted, the handler
  runs again from the round the state names with the answers it carries plus this one;
* the rogue's moves: ``forge(c)`` (a state the server never minted, claiming every answer),
  ``present(t, c)`` (a state already used, on any call: a replay; or its own call's state on
  another call); a refused presentation changes nothing (the witnesses watch the moves);
* ``expire(t)``: time passes; states expire in the order they were minted, and the server's
  record of used states forgets a state when it expires (the record is bounded).

Designs: ``sealed`` is what ``impl/request_state.py`` does (HMAC over the payload, the call's
digest, a single-use nonce, an expiry, the rounds bound; checked in that order: signature,
expired, call, replayed).  Each mutant removes one safeguard; ``stateless`` is a server that
ignores ``requestState`` altogether (its handler asks its first question again on every retry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .declare import Act, Hazard, Move, Prop, Spec, Var, always, happens, sometimes, step
from .logic import NONE, Logic, Write


@dataclass(frozen=True)
class Design:
    mac: bool = True  # a state is accepted only with the server's MAC (forged: signature)
    expiry: bool = True  # an expired state is refused
    call_digest: bool = True  # a state is accepted only on the call it was minted for
    nonce: bool = True  # a state is accepted once (the record of used nonces)
    bounded: bool = True  # at most max_rounds input-required results per call
    reads_state: bool = True  # the answers so far are read back from the state


DESIGNS: dict[str, Design] = {
    "sealed": Design(),
    "unsigned": Design(mac=False),
    "no-expiry": Design(expiry=False),
    "no-call-digest": Design(call_digest=False),
    "no-nonce": Design(nonce=False),
    "unbounded-rounds": Design(bounded=False),
    "stateless": Design(
        mac=False, expiry=False, call_digest=False, nonce=False, bounded=False, reads_state=False
    ),
}

DESIGN_DOCS = {
    "sealed": "HMAC, call digest, single-use nonce, expiry, rounds bound (impl/request_state.py)",
    "unsigned": "no MAC: a state the server never minted is accepted",
    "no-expiry": "no expiry check: an expired state is accepted (and, once the record has "
    "forgotten it, replayed)",
    "no-call-digest": "the state does not name its call: accepted on another call",
    "no-nonce": "no record of used states: a state is accepted again",
    "unbounded-rounds": "no bound on the rounds of a call",
    "stateless": "requestState ignored: every retry runs the handler from its first question",
}

#: Sensitivity: the mutants that must break each property at the default bounds (``check``
#: runs them; see ``model/properties.py``'s ``BROKEN_BY``).
BROKEN_BY: dict[str, tuple[str, ...]] = {
    "answers_reach_asker": ("unsigned", "no-call-digest"),
    "forged_refused": ("unsigned",),
    "replay_refused": ("no-nonce", "no-expiry"),
    "cross_call_refused": ("no-call-digest",),
    "expired_refused": ("no-expiry",),
    "rounds_end": ("unbounded-rounds",),
}

#: traces no design of this model excludes, each explored in a run of its own: none
HAZARDS: tuple[Hazard, ...] = ()

BOUNDS: dict[str, tuple[int, str]] = {
    "calls": (1, "client calls (the rogue has one more)"),
    "questions": (2, "questions each client call's handler asks, one per round"),
    "max_rounds": (2, "the server's bound on input-required rounds per call"),
    "tokens": (4, "requestState slots (states minted in a run)"),
}

# phases of a call
IDLE, RUNNING, HOLDING, DONE, FAILED, REFUSED = range(6)
PHASES = ("idle", "running", "holding", "done", "failed", "refused")

# the server's verdict on a presented state (impl/request_state.py's reasons, in its order)
ACCEPT, SIGNATURE, EXPIRED, CALL, REPLAYED = range(5)
VERDICTS = ("accepted", "signature", "expired", "call", "replayed")


def spec(design: str = "sealed", **bounds: int) -> Spec:
    """The rounds model at ``design`` and ``bounds`` (defaults: :data:`BOUNDS`)."""
    bad = set(bounds) - set(BOUNDS)
    if bad:
        raise ValueError(f"unknown bound(s) of rounds: {', '.join(sorted(bad))}")
    bd = {k: bounds.get(k, v[0]) for k, v in BOUNDS.items()}
    d = DESIGNS[design]
    n_client, q, r_max, n_tok = bd["calls"], bd["questions"], bd["max_rounds"], bd["tokens"]
    C = n_client + 1
    ROGUE = C - 1
    # how far the model lets a call go: one round past what a correct server allows, so that
    # a server that does not stop is seen going past it
    cap = max(q, r_max) + 1

    def cname(c: int) -> str:
        return f"c{c}" + (" (rogue)" if c == ROGUE else "")

    def tname(t: int) -> str:
        return "-" if t == NONE else f"s{t}"

    def greedy(c: int) -> bool:
        return c == ROGUE

    def wants(b: Logic, s: Any, c: int) -> Any:
        """The running handler of c has a question left."""
        return True if greedy(c) else s.run_ans[c] < q

    def use(b: Logic, s: Any, t: Any, ok: Any) -> list[Write]:
        """What an accepted presentation of ``t`` writes: that it was accepted once (``t_spent``:
        the rogue may replay it from then on) and, with the nonce, the record of used states."""
        out = [Write("t_spent", t, 1, ok)]
        if d.nonce:
            out.append(Write("t_used", t, 1, ok))
        return out

    # --- the caller's and the server's moves ----------------------------------------------

    def g_start(b: Logic, s: Any, c: int) -> Any:
        return s.phase[c] == IDLE

    def e_start(b: Logic, s: Any, c: int) -> list[Write]:
        return [Write("phase", c, RUNNING)]

    def can_mint(b: Logic, s: Any, c: int) -> Any:
        """Within the server's bound (or, unbounded, the model's horizon)."""
        return s.run_round[c] < (r_max if d.bounded else cap)

    def g_ask(b: Logic, s: Any, c: int) -> Any:
        mint = can_mint(b, s, c)
        return b.And(
            s.phase[c] == RUNNING,
            wants(b, s, c),
            b.Or(b.Not(mint), s.nt < n_tok),
            b.Or(mint, d.bounded),
        )

    def e_ask(b: Logic, s: Any, c: int) -> list[Write]:
        mint = can_mint(b, s, c)
        t = s.nt
        return [
            Write("t_call", t, c, mint),
            Write("t_round", t, s.run_round[c] + 1, mint),
            Write("t_ans", t, s.run_ans[c], mint),
            Write("held", c, t, mint),
            Write("nt", None, s.nt + 1, mint),
            Write("asked", c, s.asked[c] + 1, mint),
            Write("phase", c, b.Ite(mint, HOLDING, FAILED)),
        ]

    def g_complete(b: Logic, s: Any, c: int) -> Any:
        return b.And(s.phase[c] == RUNNING, b.Not(wants(b, s, c)))

    def e_complete(b: Logic, s: Any, c: int) -> list[Write]:
        return [Write("phase", c, DONE)]

    def g_retry(b: Logic, s: Any, c: int) -> Any:
        return s.phase[c] == HOLDING

    def resumed(b: Logic, s: Any, t: Any) -> tuple[Any, Any]:
        """The (round, answers) a retry presenting ``t`` runs its handler from."""
        if not d.reads_state:
            return 0, 0
        return s.t_round[t], s.t_ans[t] + 1

    def e_retry(b: Logic, s: Any, c: int) -> list[Write]:
        t = s.held[c]
        v = verdict(d, b, s, t, c)
        ok = v == ACCEPT
        rnd, ans = resumed(b, s, t)
        return [
            Write("phase", c, b.Ite(ok, RUNNING, REFUSED)),
            Write("run_round", c, rnd, ok),
            Write("run_ans", c, ans, ok),
            Write("held", c, NONE),
            *use(b, s, t, ok),
        ]

    def g_expire(b: Logic, s: Any, t: int) -> Any:
        return b.And(t < s.nt, s.t_exp[t] == 0, True if t == 0 else s.t_exp[t - 1] == 1)

    def e_expire(b: Logic, s: Any, t: int) -> list[Write]:
        return [Write("t_exp", t, 1), Write("t_used", t, 0)]

    # --- the rogue ---------------------------------------------------------------------

    def g_forge(b: Logic, s: Any, c: int) -> Any:
        return s.phase[c] != IDLE

    def e_forge(b: Logic, s: Any, c: int) -> list[Write]:
        return []

    def rogue_holds(b: Logic, s: Any, t: int, c: int) -> Any:
        """The rogue presents t on c: a used state (a replay, on any call), or a state of its
        own call on another call."""
        return b.And(
            t < s.nt,
            b.Or(s.t_spent[t] == 1, b.And(s.t_call[t] == ROGUE, c != ROGUE)),
        )

    def g_present(b: Logic, s: Any, t: int, c: int) -> Any:
        return b.And(rogue_holds(b, s, t, c), s.phase[c] != IDLE)

    def e_present(b: Logic, s: Any, t: int, c: int) -> list[Write]:
        v = verdict(d, b, s, t, c)
        return use(b, s, t, v == ACCEPT)

    def story(fmt: str) -> Callable[[Mapping[str, int]], str]:
        def tell(a: Mapping[str, int]) -> str:
            return fmt.format(
                c=cname(a["c"]) if "c" in a else "",
                t=tname(a["t"]) if "t" in a else "",
            )

        return tell

    c_p = (("c", C),)
    acts = (
        Act("start", c_p, g_start, e_start, story("{c}'s caller sends the call"), "caller"),
        Act(
            "ask",
            c_p,
            g_ask,
            e_ask,
            story("{c}'s handler asks: InputRequiredResult with a new state, or over the bound"),
        ),
        Act("complete", c_p, g_complete, e_complete, story("{c}'s handler completes")),
        Act("retry", c_p, g_retry, e_retry, story("{c}'s caller retries with its state"), "caller"),
        Act("expire", (("t", n_tok),), g_expire, e_expire, story("{t} expires"), "clock"),
        Act(
            "forge",
            c_p,
            g_forge,
            e_forge,
            story("the rogue presents a forged state on {c} (every question answered)"),
            "rogue",
        ),
        Act(
            "present",
            (("t", n_tok), ("c", C)),
            g_present,
            e_present,
            story("the rogue presents {t} on {c}"),
            "rogue",
        ),
    )

    # --- properties ----------------------------------------------------------------------

    def accepted(b: Logic, pre: Any, m: Move) -> tuple[Any, Any]:
        v, t = presented(d, b, pre, m)
        return v == ACCEPT, t

    def answers_reach_asker(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """An accepted state was minted by the server for the call it is presented on, and a
        retry runs that call's handler from the round that minted it with the answers it asked
        for (so a retry's answers reach only the handler state that asked for them)."""
        ok, t = accepted(b, pre, m)
        if t is None:
            return b.Not(ok)
        c = m.kw["c"]
        good = pre.t_call[t] == c
        if m.name == "retry":
            good = b.And(
                good,
                post.run_round[c] == pre.t_round[t],
                post.run_ans[c] == pre.t_ans[t] + 1,
            )
        return b.Implies(ok, good)

    def forged_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A state the server never minted is refused."""
        ok, t = accepted(b, pre, m)
        return b.Not(ok) if t is None else True

    def replay_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A state accepted once is refused ever after (a replay)."""
        ok, t = accepted(b, pre, m)
        return True if t is None else b.Implies(pre.t_spent[t] == 1, b.Not(ok))

    def cross_call_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A state presented on another call than the one it was minted for is refused."""
        ok, t = accepted(b, pre, m)
        return True if t is None else b.Implies(pre.t_call[t] != m.kw["c"], b.Not(ok))

    def expired_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """An expired state is refused."""
        ok, t = accepted(b, pre, m)
        return True if t is None else b.Implies(pre.t_exp[t] == 1, b.Not(ok))

    def rounds_end(b: Logic, s: Any) -> Any:
        """No call is answered InputRequiredResult more often than its handler has questions,
        nor more than max_rounds times: the rounds of every call end."""
        return b.And(*[s.asked[c] <= (r_max if greedy(c) else min(q, r_max)) for c in range(C)])

    def completes_after_rounds(b: Logic, s: Any) -> Any:
        """A client call completes after as many rounds as its handler has questions."""
        return b.Or(
            *[b.And(s.phase[c] == DONE, s.asked[c] == q) for c in range(C) if not greedy(c)]
        )

    def seen(b: Logic, pre: Any, m: Move, why: int) -> Any:
        v, t = presented(d, b, pre, m)
        return False if v is None else v == why

    def replayed_state_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A replayed state is refused."""
        return seen(b, pre, m, REPLAYED)

    def forged_state_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A forged state is refused."""
        return seen(b, pre, m, SIGNATURE)

    def cross_call_state_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """A state presented on another call is refused."""
        return seen(b, pre, m, CALL)

    def expired_state_refused(b: Logic, pre: Any, post: Any, m: Move) -> Any:
        """An expired state is refused."""
        return seen(b, pre, m, EXPIRED)

    def bound_reached(b: Logic, s: Any) -> Any:
        """The rogue's endless handler is stopped by the rounds bound."""
        return s.phase[ROGUE] == FAILED

    props: tuple[Prop, ...] = (
        step(answers_reach_asker),
        step(forged_refused),
        step(replay_refused),
        step(cross_call_refused),
        step(expired_refused),
        always(rounds_end),
        sometimes(completes_after_rounds),
        happens(replayed_state_refused),
        happens(forged_state_refused),
        happens(cross_call_state_refused),
        happens(expired_state_refused),
        sometimes(bound_reached),
    )

    # --- auxiliary invariants (candidates for the prover; the explorer checks them) -------

    def held_is_own(b: Logic, s: Any) -> Any:
        """A holding caller holds a minted, unused, unspent state of its own call, minted in
        the call's latest round with the answers of the rounds before."""
        return b.ForAll(
            "call",
            lambda c: b.Implies(
                s.phase[c] == HOLDING,
                b.And(
                    s.held[c] >= 0,
                    s.held[c] < s.nt,
                    s.t_call[s.held[c]] == c,
                    s.t_spent[s.held[c]] == 0,
                    s.t_used[s.held[c]] == 0,
                    s.t_round[s.held[c]] == s.asked[c],
                    s.t_ans[s.held[c]] + 1 == s.asked[c],
                ),
            ),
        )

    def not_holding_holds_nothing(b: Logic, s: Any) -> Any:
        """Only a holding caller holds a state."""
        return b.ForAll("call", lambda c: b.Implies(s.phase[c] != HOLDING, s.held[c] == NONE))

    def running_counts(b: Logic, s: Any) -> Any:
        """A running handler is at the call's latest round with one answer per round."""
        return b.ForAll(
            "call",
            lambda c: b.Implies(
                b.In(s.phase[c], (RUNNING, DONE)),
                b.And(s.run_round[c] == s.asked[c], s.run_ans[c] == s.asked[c]),
            ),
        )

    def idle_untouched(b: Logic, s: Any) -> Any:
        """A call not yet sent has been asked nothing and its handler has not run."""
        return b.ForAll(
            "call",
            lambda c: b.Implies(
                s.phase[c] == IDLE,
                b.And(s.asked[c] == 0, s.run_round[c] == 0, s.run_ans[c] == 0),
            ),
        )

    def asked_in_bound(b: Logic, s: Any) -> Any:
        """A client call is asked at most once per question, and never past the bound."""
        return b.And(
            *[
                s.asked[c] <= (r_max if greedy(c) else min(q, r_max))
                for c in range(C)
                if not greedy(c)
            ],
            s.asked[ROGUE] <= r_max,
        )

    def minted_slots(b: Logic, s: Any) -> Any:
        """Slots below ``nt`` hold minted states (round at least 1), the others are free."""
        return b.ForAll(
            "tok",
            lambda t: b.Ite(
                t < s.nt,
                b.And(s.t_call[t] >= 0, s.t_round[t] >= 1, s.t_round[t] <= s.asked[s.t_call[t]]),
                b.And(s.t_call[t] == NONE, s.t_spent[t] == 0, s.t_used[t] == 0, s.t_exp[t] == 0),
            ),
        )

    def spent_recorded(b: Logic, s: Any) -> Any:
        """A state accepted once is in the record of used states until it expires."""
        return b.ForAll(
            "tok", lambda t: b.Implies(s.t_spent[t] == 1, b.Or(s.t_used[t] == 1, s.t_exp[t] == 1))
        )

    def expired_not_used(b: Logic, s: Any) -> Any:
        """The record forgets an expired state."""
        return b.ForAll("tok", lambda t: b.Implies(s.t_exp[t] == 1, s.t_used[t] == 0))

    def used_is_spent(b: Logic, s: Any) -> Any:
        """Only an accepted state is in the record."""
        return b.ForAll("tok", lambda t: b.Implies(s.t_used[t] == 1, s.t_spent[t] == 1))

    aux = tuple(
        always(f)
        for f in (
            held_is_own,
            not_holding_holds_nothing,
            running_counts,
            idle_untouched,
            asked_in_bound,
            minted_slots,
            spent_recorded,
            expired_not_used,
            used_is_spent,
        )
    )

    def show_phase(v: int) -> str:
        return PHASES[v]

    def show_flag(v: int) -> str:
        return "yes" if v else "no"

    def show_call(v: int) -> str:
        return "-" if v == NONE else cname(v)

    variables = (
        Var("phase", 0, len(PHASES) - 1, IDLE, C, show_phase, cname),
        Var("run_round", 0, cap, 0, C, key=cname),
        Var("run_ans", 0, cap, 0, C, key=cname),
        Var("held", NONE, n_tok - 1, NONE, C, tname, cname),
        Var("asked", 0, max(cap, n_tok), 0, C, key=cname, ghost=True),
        Var("nt", 0, n_tok, 0),
        Var("t_call", NONE, C - 1, NONE, n_tok, show_call, tname),
        Var("t_round", 0, cap, 0, n_tok, key=tname),
        Var("t_ans", 0, cap, 0, n_tok, key=tname),
        Var("t_used", 0, 1, 0, n_tok, show_flag, tname),
        Var("t_exp", 0, 1, 0, n_tok, show_flag, tname),
        Var("t_spent", 0, 1, 0, n_tok, show_flag, tname),  # accepted once: the rogue has seen it
    )
    return Spec(
        "rounds",
        design,
        bd,
        variables,
        acts,
        props,
        {"call": range(C), "tok": range(n_tok)},
        aux,
    )


def verdict(d: Design, b: Logic, s: Any, t: Any, c: Any) -> Any:
    """The server's verdict (:data:`VERDICTS`) on minted state ``t`` presented on call ``c``:
    the checks of ``d``, in the order of ``impl/request_state.py`` (expired, call, replayed)."""
    v: Any = ACCEPT
    if d.nonce:
        v = b.Ite(s.t_used[t] == 1, REPLAYED, v)
    if d.call_digest:
        v = b.Ite(s.t_call[t] != c, CALL, v)
    if d.expiry:
        v = b.Ite(s.t_exp[t] == 1, EXPIRED, v)
    return v


def forged_verdict(d: Design) -> int:
    """The verdict on a state the server never minted."""
    return SIGNATURE if d.mac else ACCEPT


def presented(d: Design, b: Logic, s: Any, m: Move) -> tuple[Any, Any]:
    """The verdict on the state that move ``m`` presents in ``s`` and the slot it presents
    (None: a forged state); ``(None, None)`` when ``m`` presents no state."""
    k = m.kw
    if m.name == "retry":
        t = s.held[k["c"]]
        return verdict(d, b, s, t, k["c"]), t
    if m.name == "present":
        return verdict(d, b, s, k["t"], k["c"]), k["t"]
    if m.name == "forge":
        return forged_verdict(d), None
    return None, None
