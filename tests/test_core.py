"""The sans-IO core against the model, side by side.

A hypothesis state machine drives ``impl.core.SessionCore`` and the model (``model/session.py``
on a bounded concrete ``State``, the ``atomic`` design) through the same arrivals, duplicates,
progress, server-to-client requests (several per request, each under a server-minted id),
answers, withdrawals, responses, cancels, broken streams and the session's end.  After every step
the core's observable state (lifecycle, handler, stream of every request; the id-keyed registries
and the waiters; the dropped-message count) equals the model's, and every invariant holds on the
model's state, on the core's runtime state and on every transition.
"""

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mcp_inflight.impl.core import (
    Admitted,
    InvalidId,
    Refused,
    RuntimeState,
    SessionCore,
    _Live,
    apply_runtime,
    guard_holds,
    typed_id,
)
from mcp_inflight.model import (
    ACTION,
    ATOMIC,
    INVARIANTS,
    NONE,
    UNGUARDED,
    Concrete,
    Config,
    Life,
    actions_for,
    apply_writes,
    initial,
    profiles,
    step,
)
from mcp_inflight.model import properties as P
from mcp_inflight.model.session import SERVER_ACTIONS, on_cancel
from mcp_inflight.model.session_state import FIELDS, domains, quiescent
from support.explored import edges, expanded

N = 6  # request instances in the bounded model
IDS = {0: 7, 1: "7"}  # the model's two client ids, as JSON ids of different types
SIDS = 3  # the model's ids the server may mint (the id sort is shared; the core mints its own)
STORED = [f.name for f in FIELDS if f.key == "inst" and not (f.ghost or f.wire)]
RUNTIME_INVARIANTS = ("unique_in_flight", "no_orphan", "quiescent_clean")


class CoreVsModel(RuleBasedStateMachine):
    revision = "2025-11-25"
    transport = "http"
    engine = "generated"

    def __init__(self):
        super().__init__()
        self.cfg = Config(ATOMIC, self.revision, self.transport, ids=SIDS, requests=N)
        self.b = Concrete(domains(self.cfg))
        self.s = initial(self.cfg)
        self.core = SessionCore(self.revision, self.transport, engine=self.engine)
        self.h = {}  # model instance -> core handle
        self.sid = {}  # model server id -> the id the core minted
        self.dropped = 0

    # --- the model side ----------------------------------------------------------------
    def step(self, name, r, i=None):
        a = ACTION[name]
        if not a.applies(self.cfg):
            return None
        tr = step.take(self.cfg, self.s, step.Move(a, r, i), self.b)
        if tr is None:
            return None
        pre, post, out = self.s, tr.post, tr.out
        for p in INVARIANTS:
            if p.scope == "step" and p.applies(self.cfg):
                assert p.fn(self.b, pre, post, self.cfg, a, r, i, out), (p.name, name, r)
        self.s = post
        return out

    def handle_of(self, t):
        return self.h.get(t) if t != NONE else None

    def expect_target(self, out, kind):
        t, goes = out[kind]
        if not goes:
            self.dropped += 1
            return None
        return self.handle_of(t)

    # --- rules -------------------------------------------------------------------------
    @rule(i=st.sampled_from([0, 1]), rogue=st.booleans())
    def send(self, i, rogue):
        free = [r for r in range(N) if self.s.life[r] == Life.UNSENT]
        if free:
            self.step("rogue_sends" if rogue else "client_sends", free[0], i)

    @rule(r=st.integers(0, N - 1))
    def arrive(self, r):
        if self.step("arrive", r) is None:
            return
        rid = IDS[self.s.rid[r]]
        verdict = self.core.arrive(rid)
        if self.step("admit", r) is not None:
            assert isinstance(verdict, Admitted)
            self.h[r] = verdict.handle
        else:
            duplicate = self.step("refuse", r) is not None
            rejected = not duplicate and self.step("reject", r) is not None
            assert duplicate or rejected, "atomic admits, refuses or (after the end) rejects"
            assert isinstance(verdict, Refused)
            assert verdict.error["code"] == -32600 and verdict.error["data"] == {"id": rid}
            assert ("ended" in verdict.error["message"]) == rejected

    @rule(r=st.integers(0, N - 1))
    def emit(self, r):
        if r not in self.h:
            return
        out = self.step("emit", r)
        got = self.core.emit(self.h[r])
        if out is None:
            self.dropped += 1
            assert got is None
        else:
            assert got is self.expect_target(out, "progress")

    @rule(r=st.integers(0, N - 1))
    def server_request(self, r):
        fresh = [k for k in range(SIDS) if self.s.sq[k] == 0]
        if r not in self.h or not fresh:
            return
        k = fresh[0]
        out = self.step("server_request", r, k)
        got = self.core.server_request(self.h[r])
        if out is None:
            assert got is None
            return
        target = self.expect_target(out, "server_request")
        if target is None:
            assert got is None
        else:
            self.sid[k] = got[0]
            assert got[1] is target

    @rule(k=st.integers(0, SIDS - 1))
    def answer(self, k):
        """The sender that saw server request k answers it (the model's obligation)."""
        r = self.s.shown[k]
        if r == NONE or k not in self.sid:
            return
        out = self.step("answer", r, k)
        w, resolves = out["answer"]
        assert self.core.answer(self.sid[k]) is (self.h[w] if resolves else None)

    @rule(k=st.integers(0, SIDS - 1))
    def withdraw(self, k):
        r = self.s.waiter[k]
        if r == NONE:
            return
        assert self.step("withdraw", r, k) is not None
        self.core.withdraw(self.h[r], self.sid[k])

    @rule()
    def session_ends(self):
        if self.step("end_session", 0) is None:
            return
        ended = {r for r in self.h if self.step("end_request", r) is not None}
        assert set(self.core.end()) == {self.h[r] for r in ended}

    @rule(r=st.integers(0, N - 1))
    def handler_ends(self, r):
        if r not in self.h:
            return
        if self.s.running[r]:  # the handler has ended, so it waits on nothing (as the core does)
            for k in range(SIDS):
                if self.s.waiter[k] == r:
                    assert self.step("withdraw", r, k) is not None
        out = self.step("respond", r)
        expected = None
        if out is not None:
            expected = self.expect_target(out, "response")
        else:
            self.step("unwind", r)
        assert self.core.finish(self.h[r]) is expected

    @rule(r=st.integers(0, N - 1))
    def client_cancels(self, r):
        if self.cfg.close_is_cancel:
            # the close is seen by the server at once (its own connection)
            if self.s.life[r] == Life.SENT or r not in self.h:
                return
            pre = self.s
            if self.step("send_cancel", r) is None:
                return
            tgt, hit, _ = on_cancel(self.b, self.s, self.cfg, self.s.rid[r], r)
            assert self.step("deliver_cancel", r) is not None
            assert self.core.close(self.h[r]) == bool(hit and tgt == r), pre
        else:
            self.step("send_cancel", r)

    @precondition(lambda self: not self.cfg.close_is_cancel)
    @rule(r=st.integers(0, N - 1))
    def cancel_arrives(self, r):
        pre = self.s
        if ACTION["deliver_cancel"].run(self.b, pre, self.cfg, r)[0] is False:
            return
        tgt, hit, _ = on_cancel(self.b, pre, self.cfg, pre.rid[r], r)
        self.step("deliver_cancel", r)
        got = self.core.cancel(IDS[pre.rid[r]])
        assert got is (self.handle_of(tgt) if hit else None)

    @rule(r=st.integers(0, N - 1))
    def stream_breaks(self, r):
        if r not in self.h or self.cfg.close_is_cancel:
            return
        self.step("break_stream", r)
        assert self.core.close(self.h[r]) is False

    # --- after every step --------------------------------------------------------------
    @invariant()
    def same_observable_state(self):
        s, core = self.s, self.core
        for r, h in self.h.items():
            assert core.life(h) == s.life[r], (r, h)
            assert h.key == typed_id(IDS[s.rid[r]])
            if h.final is None:
                assert core.s.rid[h.inst] == h.key
                for name in STORED:
                    if name == "rid":
                        continue
                    assert getattr(core.s, name)[h.inst] == getattr(s, name)[r], (name, r)
            else:
                assert not s.running[r] and s.life[r] in (
                    Life.RESPONDED,
                    Life.REFUSED,
                    Life.CANCELLED,
                )
        regs = core.registries()
        for name in ("inflight", "stream") if self.cfg.http else ("inflight",):
            want = {
                typed_id(IDS[i]): self.h[t] for i, t in enumerate(getattr(s, name)) if t != NONE
            }
            assert regs[name] == want, name
        waiters = {self.sid[k]: self.h[t] for k, t in enumerate(s.waiter) if t != NONE}
        assert regs["waiter"] == waiters
        assert core.ended == s.ended
        if not self.cfg.http:
            assert regs["stream"] == {}
        assert core.dropped == self.dropped

    @invariant()
    def invariants_hold(self):
        for p in INVARIANTS:
            if p.scope == "state" and p.applies(self.cfg):
                assert p.fn(self.b, self.s, self.cfg), p.name
        for name in RUNTIME_INVARIANTS:
            if P.PROPERTY[name].applies(self.core.cfg):
                assert P.PROPERTY[name].fn(self.core.b, self.core.s, self.core.cfg), name
        if quiescent(self.b, self.s):
            assert self.core.empty()


def _machine(revision, transport, engine="generated"):
    cls = type(
        f"CoreVsModel_{revision}_{transport}_{engine}".replace("-", "_"),
        (CoreVsModel,),
        {"revision": revision, "transport": transport, "engine": engine},
    )
    return cls.TestCase


_SETTINGS = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestCore_2025_http = _machine("2025-11-25", "http")
TestCore_2025_stdio = _machine("2025-11-25", "stdio")
TestCore_2026_http = _machine("2026-07-28", "http")
TestCore_2026_stdio = _machine("2026-07-28", "stdio")
TestCore_2025_http_model_engine = _machine("2025-11-25", "http", "model")
for _t in (
    TestCore_2025_http,
    TestCore_2025_stdio,
    TestCore_2026_http,
    TestCore_2026_stdio,
    TestCore_2025_http_model_engine,
):
    _t.settings = _SETTINGS
del _t


# --- the runtime applier and the model's, on explored transitions ---------------------------


def _to_runtime(s):
    rt = RuntimeState()
    for name, items in _stored(s).items():
        if name == "ended":
            rt.ended = items
        else:
            getattr(rt, name).update(items)
    return rt


def _stored(s) -> dict:
    if isinstance(s, RuntimeState):
        out = s.snapshot()
    else:
        out = {
            f.name: {k: v for k, v in enumerate(getattr(s, f.name)) if v != f.default}
            for f in FIELDS
            if f.key is not None and not (f.ghost or f.wire)
        }
    out["ended"] = bool(s.ended)  # the one scalar the server keeps
    return out


def _args(cfg, a):
    """Every argument tuple of action ``a`` on ``cfg``'s bounds."""
    ids = range(cfg.ids) if "i" in a.params else (None,)
    return [(r, i) for r in range(cfg.requests) for i in ids]


#: One id on every profile; two ids (slow) where the server mints none: on 2025-11-25 the two-id
#: spaces without symmetry run to hundreds of thousands of states, read action by action here.
CORE_CASES = [(rev, tr, 1) for rev, tr in profiles()] + [
    pytest.param(rev, tr, 2, marks=pytest.mark.slow)
    for rev, tr in profiles()
    if rev == "2026-07-28"
]


@pytest.mark.parametrize("revision,transport,ids", CORE_CASES)
def test_runtime_applier_agrees_with_apply_writes(revision, transport, ids):
    """On every transition of the explored state space, applying the model's writes to the
    runtime state gives the model's post-state (server fields), and every server-side guard
    that reads only server state gives the same answer on both representations."""
    cfg = Config(ATOMIC, revision, transport, ids=ids, requests=2)
    b = Concrete(domains(cfg))
    server = [a for a in actions_for(cfg) if a.side == "server" or a.name == "answer"]
    seen = {"edges": 0, "guards": 0}
    checked = set()

    for pre, action, args, post, out in edges(cfg):
        r, i = args["r"], args.get("i")
        writes = action.effect(b, pre, cfg, r, i, out)
        rt = _to_runtime(pre)
        apply_runtime(rt, writes)
        assert _stored(rt) == _stored(post), (action.name, args)
        seen["edges"] += 1
        if pre in checked:
            continue
        checked.add(pre)
        rt_pre = _to_runtime(pre)
        live = _Live(rt_pre)
        for a in server:
            for q, i in _args(cfg, a):
                if pre.life[q] == Life.UNSENT:
                    continue
                want = bool(a.guard(b, pre, cfg, q, i, server=True))
                assert bool(a.guard(live, rt_pre, cfg, q, i, server=True)) == want, a.name
                assert guard_holds(a, live, rt_pre, cfg, q, i) == want, a.name
                seen["guards"] += 1

    assert seen["edges"] > 50 and seen["guards"] > 50


# --- the generated actions and the model's own, on explored transitions ----------------------


@pytest.mark.parametrize("revision,transport,ids", CORE_CASES)
def test_generated_actions_agree_with_the_model(revision, transport, ids):
    """For every explored state, every action the core takes on every instance (and every cancel
    by id or by connection) gives the same guard, output and post-state through the code
    generated from the model as through the model's functions with ``Concrete`` and
    ``apply_writes`` (server fields; ghost and wire fields are not runtime state)."""
    from mcp_inflight.impl.generated import bind
    from mcp_inflight.model.session_state import FIELD

    cfg = Config(ATOMIC, revision, transport, ids=ids, requests=2)
    b = Concrete(domains(cfg))
    states = expanded(cfg)  # every state the explorer expands
    compared = 0
    ordered = sorted(states)
    if ids == 1 and len(ordered) > 1500:
        ordered = ordered[::3]  # the quick run takes every third state; the slow run takes all
    for pre in ordered:
        stored = _stored(pre)

        def fresh():
            rt = RuntimeState()
            for name, items in stored.items():  # noqa: B023 (called in this iteration)
                if name == "ended":
                    rt.ended = items
                else:
                    getattr(rt, name).update(items)
            return rt

        for name in SERVER_ACTIONS:
            a = ACTION[name]
            for r, i in _args(cfg, a):
                rt = fresh()
                got = bind(cfg, rt)[name](r, i)
                if not a.applies(cfg):
                    assert got == (False, None)
                    continue
                ok = a.guard(b, pre, cfg, r, i, server=True)
                out = a.output(b, pre, cfg, r, i)
                writes = a.effect(b, pre, cfg, r, i, out)
                if name == "arrive":
                    # stdio's channel order is a wire condition: the adapter keeps it by handing
                    # messages to the core in the order it reads them, so the runtime reads no
                    # send times; the rest of the guard must agree.
                    assert got[0] == (pre.life[r] == Life.SENT), (name, r, pre)
                else:
                    assert got[0] == bool(ok), (name, r, pre)
                if ok:
                    assert got[1] == (next(iter(out.values())) if out else None), (name, r)
                    assert _stored(rt) == _stored(apply_writes(pre, writes)), (name, r)
                compared += 1
        for i in range(cfg.ids):
            for conn in [NONE] + list(range(cfg.requests)):
                rt = fresh()
                tgt, hit = bind(cfg, rt)["on_cancel"](i, conn)
                want_t, want_hit, writes = on_cancel(b, pre, cfg, i, conn)
                assert bool(hit) == bool(want_hit) and (not hit or tgt == want_t)
                assert _stored(rt) == _stored(apply_writes(pre, writes))
                compared += 1
        for r in range(cfg.requests):  # the effects applied without a guard
            for short, name in (("send", "rogue_sends"), ("close", "send_cancel")):
                rt = fresh()
                bind(cfg, rt)[short](r, 0)
                want = apply_writes(pre, ACTION[name].effect(b, pre, cfg, r, 0, {}))
                assert _stored(rt) == _stored(want), (short, r)
    assert compared > 500
    assert FIELD["rid"].default == 0


# --- the same checks catch a core on a broken design ----------------------------------------


def test_runtime_invariants_fail_on_an_unguarded_core():
    core = SessionCore("2025-11-25", "http", design=UNGUARDED)
    a = core.arrive(7)
    b = core.arrive(7)
    assert isinstance(a, Admitted) and isinstance(b, Admitted)
    assert not P.unique_in_flight(core.b, core.s, core.cfg)
    core.finish(a.handle)  # removes by id: b's entries go too
    assert not P.no_orphan(core.b, core.s, core.cfg)


def test_state_machine_catches_an_unguarded_core(monkeypatch):
    """The side-by-side machine fails when the core does not run the model's atomic design."""
    orig = SessionCore.__init__

    def unguarded(self, revision="2025-11-25", transport="http", design=ATOMIC, engine="generated"):
        orig(self, revision, transport, design=UNGUARDED, engine=engine)

    monkeypatch.setattr(SessionCore, "__init__", unguarded)
    m = CoreVsModel()
    m.send(0, False)
    m.arrive(0)
    m.send(0, True)
    with pytest.raises(AssertionError):
        m.arrive(1)


# --- ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, True, False, 1.5, 7.0, {"a": 1}, [1]])
def test_invalid_ids(bad):
    core = SessionCore()
    with pytest.raises(InvalidId) as e:
        core.arrive(bad)
    assert e.value.error["code"] == -32600
    assert core.empty()


def test_typed_ids_and_sequential_reuse():
    core = SessionCore()
    a = core.arrive(7).handle
    b = core.arrive("7").handle
    assert isinstance(core.arrive(7), Refused) and isinstance(core.arrive("7"), Refused)
    assert core.finish(a) is a
    assert core.in_flight(7) is None and core.in_flight("7") is b
    c = core.arrive(7)
    assert isinstance(c, Admitted) and c.handle is not a
    assert core.finish(a) is None  # a stale handle releases nothing
    assert core.in_flight(7) is c.handle
    core.finish(b)
    core.finish(c.handle)
    assert core.empty()


def test_broken_stream_2025_handler_goes_on_and_messages_are_dropped():
    core = SessionCore("2025-11-25", "http")
    a = core.arrive(1).handle
    b = core.arrive(2).handle
    assert core.close(a) is False
    assert core.life(a) == Life.STREAM_BROKEN
    assert core.emit(a) is None and core.dropped == 1
    assert core.emit(b) is b
    assert isinstance(core.arrive(1), Refused)  # still in flight until its handler ends
    assert core.finish(a) is None and core.dropped == 2
    assert isinstance(core.arrive(1), Admitted)


def test_close_is_cancel_2026_http():
    core = SessionCore("2026-07-28", "http")
    a = core.arrive(1).handle
    b = core.arrive(2).handle
    assert core.cancel(1) is None  # notifications/cancelled is stdio-only there
    assert core.close(a) is True
    assert core.life(a) == Life.CANCELLED and core.life(b) == Life.IN_FLIGHT
    assert core.emit(a) is None
    assert core.finish(a) is None
    assert core.finish(b) is b and core.empty()


def test_cancel_unknown_or_finished_is_ignored():
    core = SessionCore("2025-11-25", "stdio")
    a = core.arrive(1).handle
    assert core.cancel(2) is None and core.cancel("1") is None and core.cancel(None) is None
    core.finish(a)
    assert core.cancel(1) is None and core.empty()


def test_end_cancels_everything_live():
    core = SessionCore("2025-11-25", "http")
    hs = [core.arrive(i).handle for i in range(3)]
    sid, target = core.server_request(hs[0])
    assert target is hs[0]
    assert set(core.end()) == set(hs) and core.ended
    assert core.emit(hs[1]) is None  # nothing is written after the end
    assert core.server_request(hs[1]) is None
    late = core.arrive(9)
    assert isinstance(late, Refused) and "ended" in late.error["message"]
    for h in hs:
        assert core.finish(h) is None
    assert core.answer(sid) is None  # its handler has gone: the answer reaches no one
    assert core.empty()


def test_many_server_requests_per_request_each_under_its_own_id():
    core = SessionCore("2025-11-25", "http")
    a = core.arrive(1).handle
    b = core.arrive(2).handle
    ids = []
    for h in (a, a, b, a):
        sid, target = core.server_request(h)
        assert target is h
        ids.append(sid)
    assert len(set(ids)) == 4 and all(isinstance(s, str) and len(s) > 16 for s in ids)
    assert core.answer(ids[1]) is a  # answered out of order
    assert core.answer(ids[1]) is None  # a second answer reaches no one
    assert core.answer("s1") is None and core.answer(7) is None  # guessed or foreign ids
    assert core.answer(ids[2]) is b
    core.withdraw(a, ids[0])  # a gives up on its first (a timeout)
    assert core.answer(ids[0]) is None
    assert core.finish(a) is a  # its last waiter is withdrawn as it ends
    assert core.answer(ids[3]) is None
    assert core.finish(b) is b and core.empty()


# --- the core's composite operations, on every explored state -------------------------------


def _core_at(cfg, pre):
    """A core whose runtime state is the model state ``pre`` (server fields), with a handle for
    every instance the runtime would still hold: the model's id ``i`` is the JSON id ``i``
    (typed), a server-minted id ``j`` the string ``s{j}``."""
    from mcp_inflight.impl.core import Handle
    from mcp_inflight.model.session_state import FIELD

    core = SessionCore(cfg.revision, cfg.transport)
    ids = {i: typed_id(i) for i in range(cfg.ids)}

    def key(f, k):
        return ids.get(k, f"s{k}") if f.key == "id" else k

    for name, items in _stored(pre).items():
        if name == "ended":
            core.s.ended = items
            continue
        f = FIELD[name]
        table = getattr(core.s, name)
        for k, v in items.items():
            table[key(f, k)] = ids[v] if name == "rid" else v
    core.s.rid.clear()  # the model's default id 0 is an id too
    core.s.rid.update(
        {r: ids[pre.rid[r]] for r in range(cfg.requests) if pre.life[r] != Life.UNSENT}
    )
    for r in range(cfg.requests):
        life = pre.life[r]
        if life in (Life.UNSENT, Life.SENT):  # not (yet) in the server
            continue
        if life in FINAL_LIVES and not pre.running[r]:  # finished: the core forgot it
            for name in STORED:
                getattr(core.s, name).pop(r, None)
            continue
        core._handles[r] = Handle(r, pre.rid[r], ids[pre.rid[r]])
    return core, ids


FINAL_LIVES = frozenset(v for v in Life if v.name in ("RESPONDED", "CANCELLED", "REFUSED"))


def _model_view(cfg, s, ids):
    """The model state ``s`` as the core keeps it: ids typed, finished instances forgotten."""
    from mcp_inflight.model.session_state import FIELD

    forget = {r for r in range(cfg.requests) if s.life[r] in FINAL_LIVES and not s.running[r]}
    out = {}
    for name, items in _stored(s).items():
        if name == "ended":
            out[name] = items
            continue
        f = FIELD[name]
        out[name] = {
            (ids.get(k, f"s{k}") if f.key == "id" else k): (ids[v] if name == "rid" else v)
            for k, v in items.items()
            if not (f.key == "inst" and k in forget)
        }
    out["rid"] = {  # the model's default id 0 is an id too
        r: ids[s.rid[r]]
        for r in range(cfg.requests)
        if s.life[r] != Life.UNSENT and r not in forget
    }
    return out


def _follow(cfg, b, s, steps):
    """The model run of the core's ``steps`` (action, instance, output) from ``s``: each must be
    enabled with the output the core got; the state after them."""
    for name, r, out in steps:
        a = ACTION[name]
        i = None
        if name == "withdraw":  # the core withdraws the handler's waiters in id order
            i = next(j for j in range(cfg.ids) if s.waiter[j] == r)
        assert bool(a.guard(b, s, cfg, r, i, server=True)), (name, r, "not enabled", s)
        o = a.output(b, s, cfg, r, i)
        assert (next(iter(o.values())) if o else None) == out, (name, r, o, out)
        s = apply_writes(s, a.effect(b, s, cfg, r, i, o))
    return s


def _composites_agree(revision, transport, ids, every=1):
    """For every explored state (``every``-th when thinned): the core's ``arrive`` (of a fresh
    request under each id), ``finish`` (of each running handler) and ``end`` take actions the
    model allows at each point, in order, and land in the model's state after them; ``arrive``
    always decides (admit, refuse or reject) and ``finish`` always finishes (respond or
    unwind).  Returns how many composite steps were compared."""
    cfg = Config(ATOMIC, revision, transport, ids=ids, requests=2)
    b = Concrete(domains(cfg))
    send = ACTION["rogue_sends"]
    compared = 0
    for pre in sorted(expanded(cfg))[::every]:
        fresh = [r for r in range(cfg.requests) if pre.life[r] == Life.UNSENT]
        if cfg.stdio and (Life.SENT in pre.life or any(pre.cmsg)):
            # one channel: the adapter hands the core each message as it reads it, so no
            # request or cancel waits unread while a later request arrives (channel order)
            fresh = []
        for i in range(cfg.ids) if fresh else ():
            core, tid = _core_at(cfg, pre)
            r = fresh[0]
            core._next = iter([r])
            steps = []
            core.on_step = lambda n, q, out: steps.append((n, q, out))  # noqa: B023
            v = core.arrive(i)
            s = apply_writes(pre, send.effect(b, pre, cfg, r, i, {}))
            post = _follow(cfg, b, s, steps)
            names = [n for n, _, _ in steps]
            assert names[0] == "arrive" and names[1:] in (["admit"], ["refuse"], ["reject"])
            assert isinstance(v, Admitted) == (names[-1] == "admit")
            assert core.s.snapshot() | {"ended": bool(core.s.ended)} == _model_view(
                cfg, post, tid
            ), (pre, names)
            compared += 1
        for r in range(cfg.requests):
            if not pre.running[r]:
                continue
            core, tid = _core_at(cfg, pre)
            steps = []
            core.on_step = lambda n, q, out: steps.append((n, q, out))  # noqa: B023
            core.finish(core._handles[r])
            post = _follow(cfg, b, pre, [(n, q, out) for n, q, out in steps])
            names = [n for n, _, _ in steps]
            assert names and names[-1] in ("respond", "unwind"), (pre, names)
            assert set(names[:-1]) <= {"withdraw"}, names
            assert not post.running[r] and post.life[r] in FINAL_LIVES, (pre, names)
            assert core.s.snapshot() | {"ended": bool(core.s.ended)} == _model_view(
                cfg, post, tid
            ), (pre, names)
            compared += 1
        core, tid = _core_at(cfg, pre)
        steps = []
        core.on_step = lambda n, q, out: steps.append((n, q, out))  # noqa: B023
        live = set(core._handles)
        core.end()
        post = _follow(cfg, b, pre, steps)
        names = [n for n, _, _ in steps]
        assert names[:1] == ["end_session"] or pre.ended, (pre, names)
        assert set(names[1:]) <= {"end_request"} and {q for n, q, _ in steps[1:]} <= live
        end_request = ACTION["end_request"]
        assert not any(  # every live request ended
            end_request.guard(b, post, cfg, q, None, server=True) for q in live
        ), (pre, names)
        assert core.s.snapshot() | {"ended": bool(core.s.ended)} == _model_view(cfg, post, tid), (
            pre,
            names,
        )
        compared += 1
    return compared


@pytest.mark.parametrize("revision,transport", profiles())
def test_core_composites_follow_the_model_one_id(revision, transport):
    assert _composites_agree(revision, transport, ids=1) > 500


@pytest.mark.slow
@pytest.mark.parametrize("revision,transport", profiles())
def test_core_composites_follow_the_model_at_the_default_bound(revision, transport):
    assert _composites_agree(revision, transport, ids=2) > 1000


def _admit_unguarded(core):
    """``admit`` whatever its guard says (a duplicate admitted over the request in flight)."""
    a, b, s, c = ACTION["admit"], core.b, core.s, core.cfg

    def admit(r, i=None):
        if s.life[r] != Life.RECEIVED:
            return False, None
        out = a.output(b, s, c, r, i)
        apply_runtime(s, a.effect(b, s, c, r, i, out))
        return True, (next(iter(out.values())) if out else None)

    core._plain["admit"] = admit
    core._bind(core._plain)


def _no_end_request(core):
    core._plain["end_request"] = lambda r, i=None: (False, None)
    core._bind(core._plain)


@pytest.mark.parametrize("broken", [_admit_unguarded, _no_end_request])
def test_the_composite_check_catches_a_broken_orchestration(monkeypatch, broken):
    """A core that admits a duplicate and one whose ``end`` leaves its requests running: the
    agreement above fails on each."""
    made = SessionCore.__init__

    def init(self, *a, **k):
        made(self, *a, **k)
        broken(self)

    monkeypatch.setattr(SessionCore, "__init__", init)
    with pytest.raises(AssertionError):
        _composites_agree("2025-11-25", "http", ids=1, every=7)
