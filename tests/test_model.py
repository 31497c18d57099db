"""The model against its named invariants, witnesses and hazards."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_inflight.model import (
    ATOMIC,
    INVARIANTS,
    WITNESSES,
    Config,
    Life,
    lifecycle,
    profiles,
    step,
)
from support.explored import judging, run

PROFILES = profiles()


@pytest.mark.parametrize("revision,transport", PROFILES)
def test_atomic_keeps_every_invariant_and_reaches_every_witness(revision, transport):
    r = run("atomic", revision, transport)
    assert r.complete
    bad = [v.name for v in r.verdicts if v.applies and v.kind != "hazard" and not v.ok]
    assert bad == []
    assert r.ok
    assert r.deadlocks == 0
    assert r.dead_actions == [], "every applicable action fires at the default bound"


def _actions(trace):
    return [s["action"] for s in trace]


def _fails(design, revision, transport, name):
    v = run(design, revision, transport).verdict(name)
    assert v.applies and not v.ok, f"{name} should fail on {design} {revision} {transport}"
    return v.trace


def test_unique_in_flight_fails_on_unguarded():
    t = _fails("unguarded", "2025-11-25", "stdio", "unique_in_flight")
    assert _actions(t)[-1] == "admit"
    assert sorted(_actions(t)).count("admit") == 2
    assert "rogue_sends" in _actions(t)


@pytest.mark.parametrize(
    "name,last",
    [
        ("no_misrouted_notification", "emit"),
        ("no_misrouted_server_request", "server_request"),
        ("no_misrouted_response", "respond"),
    ],
)
def test_misrouting_fails_on_unguarded_http(name, last):
    t = _fails("unguarded", "2025-11-25", "http", name)
    assert _actions(t)[-1] == last
    assert "misrouted" in t[-1]["story"]
    # the duplicate took over the stream slot before the message was written
    assert any(
        s["changes"].get("stream[1]") == ["A", "B"] or s["changes"].get("stream[1]") == ["B", "A"]
        for s in t
    )


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_the_clients_view_on_stdio_sees_a_crossed_reply_on_unguarded(revision):
    """On stdio every message carries its handler's id, so the server-side routing invariants
    hold on unguarded; the client's matching by id does not: the rogue's duplicate, admitted
    over the client's request, writes under the id the client is waiting on."""
    v = run("unguarded", revision, "stdio").verdict("no_crossed_reply_on_stdio")
    assert v.applies and not v.ok
    assert run("unguarded", revision, "stdio").verdict("no_misrouted_notification").ok
    acts = _actions(v.trace)
    assert acts.count("admit") == 2 and acts[-1] in ("emit", "server_request", "respond")
    assert "rogue_sends" in acts and "client_sends" in acts
    assert run("atomic", revision, "stdio").verdict("no_crossed_reply_on_stdio").ok
    assert not run("atomic", revision, "http").verdict("no_crossed_reply_on_stdio").applies


@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
def test_a_second_senders_reply_reaches_the_clients_waiting_request_on_stdio(design):
    """The hazard behind the invariant: the rogue's request is admitted first, the client then
    sends the same id, and the rogue's progress, written under that id before the server has
    read the client's request, is matched to it. No design avoids it; it needs the rogue."""
    v = run(design, "2026-07-28", "stdio").verdict("crossed_reply_is_impossible")
    assert v.applies and not v.ok
    t = v.trace
    first = next(s for s in t if "sends" in s["story"])
    assert first["action"] == "rogue_sends"
    assert t[-1]["story"].endswith("to B's request  <-- crossed")
    assert t[-1]["changes"].get("life[B]") is None  # the client's request, not yet admitted


def test_owned_removal_fails_on_unguarded():
    t = _fails("unguarded", "2025-11-25", "http", "owned_removal")
    assert _actions(t)[-1] in ("admit", "respond", "break_stream", "unwind", "deliver_cancel")


def test_cancel_hits_target_fails_on_unguarded():
    t = _fails("unguarded", "2025-11-25", "stdio", "cancel_hits_target")
    assert _actions(t)[-1] == "deliver_cancel"
    assert "not the one meant" in t[-1]["story"]


def test_no_hung_request_fails_on_unguarded_http():
    t = _fails("unguarded", "2025-11-25", "http", "no_hung_request")
    assert "respond" in _actions(t)


def test_no_orphan_fails_on_check_then_claim_http_by_the_split_claims():
    t = _fails("check_then_claim", "2025-11-25", "http", "no_orphan")
    acts = _actions(t)
    assert acts.count("check") == 2 and acts.count("claim_stream") == 2
    assert acts[-1] == "admit"


def test_refusal_is_inert_fails_on_check_then_claim_http():
    t = _fails("check_then_claim", "2025-11-25", "http", "refusal_is_inert")
    assert _actions(t)[-1] == "refuse"


def test_check_then_claim_on_stdio_keeps_the_invariants():
    assert run("check_then_claim", "2025-11-25", "stdio").ok


def test_freeing_the_id_on_cancel_lets_a_duplicates_cancel_remove_the_clients_entry():
    from dataclasses import replace

    from mcp_inflight.proofs.explorer import explore

    early = replace(ATOMIC, name="atomic-free-on-cancel", free_on="cancel")
    # on the engine check runs (native where a C compiler is): some 34,000 states
    r = explore(Config(early, "2025-11-25", "stdio"), progress=False, engine="auto")
    v = r.verdict("owned_removal")
    assert not v.ok
    assert _actions(v.trace)[-2:] == ["send_cancel", "deliver_cancel"]
    assert v.trace[-1]["changes"]["inflight[1]"] == ["A", "-"]
    assert r.verdict("quiescent_clean").ok


def test_quiescent_clean_fails_when_a_response_releases_nothing(monkeypatch):
    # No design knob leaks, so break the model itself: a respond that frees no entry.
    from mcp_inflight.model import session
    from mcp_inflight.proofs.explorer import explore

    monkeypatch.setattr(session, "_release_all", lambda b, s, c, site, r: [])
    r = explore(Config(ATOMIC, "2026-07-28", "stdio"), progress=False)
    v = r.verdict("quiescent_clean")
    assert not v.ok
    assert _actions(v.trace)[-1] == "respond"


@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_stale_cancel_needs_the_reusing_client(design, transport):
    """The hazard is the reusing client's (2026-07-28's id rule, practice on 2025-11-25): on
    2025-11-25 http it is reached with it under every design, and with the fresh client that
    2025-11-25 asks for (never an id twice in a session) it holds on every design and transport,
    at the same bound (1 id: the reuse is all the trace needs)."""
    reusing = run(design, "2025-11-25", transport, ids=1, client="reusing")
    fresh = run(design, "2025-11-25", transport, ids=1, client="fresh")
    # on stdio the channel's order makes it an invariant (stale_cancel_is_inert_in_order)
    name = "stale_cancel_is_inert" if transport == "http" else "stale_cancel_is_inert_in_order"
    assert reusing.verdict(name).applies and fresh.verdict(name).applies
    assert reusing.verdict(name).ok == (transport == "stdio")
    assert fresh.verdict(name).ok
    if transport == "http":
        sends = [s for s in reusing.verdict("stale_cancel_is_inert").trace if "sends" in s["story"]]
        assert [s["action"] for s in sends] == ["client_sends", "client_sends"]
    assert fresh.states < reusing.states  # the fresh client's runs are a subset


def test_the_id_rule_of_each_client():
    """``client_ids_fresh`` (the fresh client never sends an id twice) holds with the fresh
    client and fails with the reusing one, whose reuse waits for the answer; the witness
    ``sequential_reuse`` is the reusing client's and does not apply to the fresh one."""
    from dataclasses import replace

    from mcp_inflight.model.auxiliary import AUX

    prop = [replace(AUX["client_ids_fresh"], applies=lambda c: True)]
    for client, holds in (("fresh", True), ("reusing", False)):
        cfg = Config(ATOMIC, "2025-11-25", "stdio", ids=1, client=client)
        ran = judging(cfg, prop)
        assert (ran.verdicts["client_ids_fresh"] == "holds") == holds, client
    acts = _actions(ran.traces["client_ids_fresh"])
    assert acts.count("client_sends") == 2 and acts.index("respond") < len(acts) - 1
    assert "rogue_sends" not in acts
    assert run("atomic", "2025-11-25", "stdio", client="reusing").verdict("sequential_reuse").ok
    assert (
        not run("atomic", "2025-11-25", "stdio", ids=1, client="fresh")
        .verdict("sequential_reuse")
        .applies
    )


def test_compliant_client_per_revision_and_every_property_says_whom_it_protects():
    from mcp_inflight.model.config import client_for
    from mcp_inflight.model.properties import HAZARDS
    from mcp_inflight.model.property_kinds import PROTECTS, hazard, invariant

    assert client_for("compliant", "2025-11-25") == "fresh"
    assert client_for("compliant", "2026-07-28") == "reusing"
    assert not Config(ATOMIC, "2025-11-25", "http").client_compliant  # reuse is not allowed
    assert Config(ATOMIC, "2026-07-28", "http").client_compliant
    assert Config(ATOMIC, "2025-11-25", "http", client="fresh").label.endswith("fresh-client")
    with pytest.raises(ValueError):
        Config(ATOMIC, "2025-11-25", "http", client="polite")
    for p in INVARIANTS + HAZARDS:
        assert p.protects in PROTECTS, p.name
    assert all(h.needs for h in HAZARDS)

    def unsaid(b, s, c):
        """A property that does not say whom it protects."""
        return True

    with pytest.raises(ValueError):
        invariant(unsaid, protects="")
    with pytest.raises(ValueError):
        hazard(unsaid, needs="")


#: the shortest stale cancel: the client cancels A, sees A's response, reuses the id for B, and
#: the cancel arrives after B was admitted
_STALE_TRACE = [
    "client_sends",
    "arrive",
    "admit",
    "send_cancel",
    "respond",
    "client_sends",
    "arrive",
    "admit",
    "deliver_cancel",
]
_DESIGNS = ("atomic", "unguarded", "check_then_claim")
_ORDERED = [("2025-11-25", "stdio"), ("2026-07-28", "stdio"), ("2026-07-28", "http")]

#: (design, revision, transport, holds, the trace pinned, whether the whole run is ok)
STALE_CANCEL_CASES = [
    # 2025-11-25 http: a hazard (the cancel POST can be overtaken), reached under every design
    # and never changing the verdict of the run
    pytest.param("atomic", "2025-11-25", "http", False, _STALE_TRACE, True, id="atomic-2025-http"),
    pytest.param("unguarded", "2025-11-25", "http", False, None, None, id="unguarded-2025-http"),
    pytest.param("check_then_claim", "2025-11-25", "http", False, None, None, id="ctc-2025-http"),
    # where the transport orders a cancel before a later request under its id, the rule is an
    # invariant (every design keeps it); the hazard speaks of 2025-11-25 http only
    *[
        pytest.param(d, rev, tr, True, None, None, id=f"{d}-{rev[:4]}-{tr}")
        for rev, tr in _ORDERED
        for d in _DESIGNS
    ],
    # a stdio server that lets a later request overtake an earlier cancel (cancels on a path of
    # their own) cancels the request that reused the id: the 2025-11-25 http hazard, now the
    # server's own defect
    pytest.param(
        "atomic-cancels-out-of-order",
        "2026-07-28",
        "stdio",
        False,
        _STALE_TRACE,
        False,
        id="mutant-cancels-out-of-order-2026-stdio",
    ),
]


@pytest.mark.parametrize("design,revision,transport,holds,trace,run_ok", STALE_CANCEL_CASES)
def test_stale_cancel_on_each_profile(design, revision, transport, holds, trace, run_ok):
    """A client's cancel that arrives after the request it means has finished cancels nothing
    else: a hazard on 2025-11-25 http (``stale_cancel_is_inert``), an invariant where the
    transport orders the cancel before a later request under its id
    (``stale_cancel_is_inert_in_order``), which a server with cancels out of order breaks."""
    from mcp_inflight.model.config import mutants
    from mcp_inflight.proofs.explorer import explore

    if design in mutants():
        r = explore(Config(mutants()[design], revision, transport), progress=False)
    else:
        r = run(design, revision, transport)
    hazard = (revision, transport) == ("2025-11-25", "http")
    name = "stale_cancel_is_inert" if hazard else "stale_cancel_is_inert_in_order"
    v = r.verdict(name)
    assert v.applies and v.ok == holds and v.kind == ("hazard" if hazard else "invariant")
    if not hazard:
        assert not r.verdict("stale_cancel_is_inert").applies
    if trace is not None:
        assert _actions(v.trace) == trace
        assert v.trace[-1]["changes"]["life[B]"] == ["in_flight", "cancelled"]
    if run_ok is not None:
        assert r.ok == run_ok


def test_not_applicable_counts_neither_way():
    r = run("atomic", "2026-07-28", "http")
    for name in ("no_misrouted_server_request", "server_request_answered", "stream_broken"):
        v = r.verdict(name)
        assert not v.applies and v.trace is None


def test_each_post_is_a_scope_of_its_own_on_2026_http():
    """atomic on 2026-07-28 http serves two POSTs under one id at once, keys nothing by id and
    never refuses; with one registry for every POST (the mutant) the same id is refused, which
    ``no_refusal_across_posts`` flags, and the registry invariants apply again."""
    from mcp_inflight.model.config import mutants
    from mcp_inflight.proofs.explorer import explore

    r = run("atomic", "2026-07-28", "http")
    assert r.ok and r.verdict("duplicate_served").ok and r.verdict("no_refusal_across_posts").ok
    for name in ("unique_in_flight", "no_orphan", "duplicate_refused"):
        assert not r.verdict(name).applies
    assert r.coverage.get("refuse") is None  # not an action of that profile
    shared = explore(
        Config(mutants()["atomic-shared-registry"], "2026-07-28", "http"), progress=False
    )
    v = shared.verdict("no_refusal_across_posts")
    assert not v.ok and _actions(v.trace)[-1] == "refuse" and len(v.trace) == 6
    for name in ("unique_in_flight", "no_orphan", "duplicate_refused"):
        assert shared.verdict(name).applies and shared.verdict(name).ok
    assert not shared.verdict("duplicate_served").applies
    stdio = run("atomic", "2026-07-28", "stdio")  # one channel: one scope, duplicates refused
    assert stdio.verdict("duplicate_refused").ok and stdio.verdict("unique_in_flight").applies


@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
@pytest.mark.parametrize("revision,transport", [("2026-07-28", "stdio"), ("2026-07-28", "http")])
def test_symmetry_on_and_off_agree(design, revision, transport):
    on = run(design, revision, transport)
    off = run(design, revision, transport, symmetry=False)
    assert off.states >= on.states
    assert [(v.name, v.ok) for v in on.verdicts] == [(v.name, v.ok) for v in off.verdicts]
    for v_on, v_off in zip(on.verdicts, off.verdicts, strict=False):
        if v_on.trace is not None:
            assert len(v_on.trace) == len(v_off.trace), "both are shortest"


def test_lifecycle_table_drives_a_transitions_machine():
    for rev in lifecycle.REVISIONS:
        m = lifecycle.machine(rev)
        assert set(m.states) == set(lifecycle.STATES)
        for row in lifecycle.table(rev):
            t = m.get_transitions(trigger=row.trigger)
            assert {x.source for x in t} == set(row.source)
            assert {x.dest for x in t} == {row.dest}
            for x in t:
                assert [c.func for c in x.conditions] == list(row.conditions)
    assert lifecycle.dest("2025-11-25", "stream_closed") == Life.STREAM_BROKEN
    assert lifecycle.dest("2026-07-28", "stream_closed") == Life.CANCELLED


@given(st.sampled_from(PROFILES), st.randoms(use_true_random=False))
def test_random_walks_on_atomic_keep_every_invariant(profile, rnd):
    cfg = Config(ATOMIC, *profile, ids=2, requests=4)
    b = step.backend(cfg)
    s = step.start(cfg)
    state_inv = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "state"]
    step_inv = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "step"]
    for _ in range(60):
        enabled = list(step.successors(cfg, s, b))
        if not enabled:
            break
        tr = rnd.choice(enabled)
        a, r, i, out, t = tr.action, tr.move.r, tr.move.i, tr.out, tr.post
        for p in step_inv:
            assert p.fn(b, s, t, cfg, a, r, i, out), (p.name, a.name)
        for p in state_inv:
            assert p.fn(b, t, cfg), p.name
        s = t


def test_witness_names_are_the_documented_ones():
    assert [w.name for w in WITNESSES] == [
        "sequential_reuse",
        "duplicate_refused",
        "duplicate_served",
        "cancelled",
        "stream_broken",
        "server_request_answered",
        "two_server_requests_pending",
        "session_ended",
    ]
    # with no_crossed_reply_on_stdio, the five of server requests and the session's end, and
    # no_refusal_across_posts of 2026-07-28 http, and stale_cancel_is_inert_in_order where the
    # transport orders a cancel before a later request
    assert len({p.name for p in INVARIANTS}) == 19


def test_every_backend_implements_the_logic_interface():
    from mcp_inflight.impl.generated import RuntimeGen
    from mcp_inflight.model.codegen import Gen
    from mcp_inflight.model.logic import Concrete, Logic
    from mcp_inflight.proofs.symbolic import Symbolic

    doms = {"inst": range(2), "id": range(1)}
    for b in (Concrete(doms), Gen(doms), RuntimeGen(), Symbolic(), Symbolic(doms)):
        assert isinstance(b, Logic), type(b).__name__
    assert not isinstance(object(), Logic)
