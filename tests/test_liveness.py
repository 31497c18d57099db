"""Liveness over the explored graph (proofs/liveness.py): the two injected bugs caught, atomic
holding, the same verdicts with and without symmetry reduction, the fair-cycle check itself."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from mcp_inflight import report
from mcp_inflight.model.config import ATOMIC, DESIGNS, Config, liveness_mutants
from mcp_inflight.model.eventually import NAMES
from mcp_inflight.proofs.explorer import explore as _explore
from support.explored import run


@cache
def explore(cfg: Config, symmetry: bool = True, liveness: bool = False):
    """One explorer run per configuration and options, shared by the tests of this module that
    ask for the same one (they only read it), and a design's run without liveness by every test
    of the test run that asks for it (``support.explored.run``); on the engine ``check`` runs,
    native where a C compiler is (it judges liveness as the compiled engine and
    ``proofs/liveness.py`` do, ``tests/test_native_spec.py``)."""
    d = cfg.design
    if not liveness and DESIGNS.get(d.name) == d:
        return run(d.name, cfg.revision, cfg.transport, cfg.ids, cfg.requests, symmetry, cfg.client)
    return _explore(cfg, symmetry=symmetry, liveness=liveness)


PROFILES = [("2025-11-25", "stdio"), ("2025-11-25", "http"), ("2026-07-28", "http")]
MUT = liveness_mutants()


def _live(r):
    return {v.name: v.ok for v in r.of("liveness")}


@pytest.mark.parametrize(
    "rev,tr,ids",
    [
        ("2025-11-25", "stdio", 1),
        ("2026-07-28", "http", 2),
        ("2026-07-28", "stdio", 2),
        pytest.param("2025-11-25", "http", 1, marks=pytest.mark.slow),
    ],
)
def test_atomic_holds_and_symmetry_preserves_verdicts(rev, tr, ids):
    for d in (ATOMIC, *MUT.values()):
        cfg = Config(d, rev, tr, ids=ids, requests=2)
        on, off = explore(cfg, liveness=True), explore(cfg, symmetry=False, liveness=True)
        assert set(_live(on)) == set(NAMES)
        assert _live(on) == _live(off), d.name
        if d is ATOMIC:
            assert all(_live(on).values())


def test_waits_on_lost_is_caught_and_no_safety_property_sees_it():
    # one id (so one server id): the graph without symmetry stays small
    cfg = Config(MUT["atomic-waits-on-lost"], "2025-11-25", "stdio", ids=1, requests=2)
    r = explore(cfg, symmetry=False, liveness=True)
    v = r.verdict("settles")
    assert not v.ok and f"of {r.states:,} states" in v.doc
    assert not r.verdict("no_deadlock").ok
    assert r.deadlocks == 0  # the old count (states with no move) misses it
    # two server ids at once need two ids: that witness is out of reach here
    assert all(x.ok for x in r.verdicts if x.kind == "invariant")
    # the lasso ends in the stuttering emit of the handler that waits
    assert v.trace is not None and v.loop_start is not None
    assert [s.action for s in v.trace[v.loop_start :]] == ["emit"]
    assert not r.ok


@pytest.mark.parametrize("tr", ["stdio", "http"])
def test_waits_on_answer_is_caught_by_fairness_alone(tr):
    # a handler that waits with no timeout for its elicitation's answer: the client owes no
    # answer, so its request can hang; a settled state stays reachable (the client may answer)
    # and there is always a move, so only the fair-component check sees it
    cfg = Config(MUT["atomic-waits-on-answer"], "2025-11-25", tr, ids=2, requests=2)
    r = explore(cfg, liveness=True)
    v = r.verdict("requests_answered")
    assert not v.ok and v.trace is not None and v.loop_start is not None
    assert "server_request" in [s.action for s in v.trace[: v.loop_start]]
    assert [s.action for s in v.trace[v.loop_start :]] == ["emit"]
    assert r.verdict("settles").ok and r.verdict("no_deadlock").ok and r.deadlocks == 0
    assert all(x.ok for x in r.verdicts if x.kind in ("invariant", "witness"))
    assert not r.ok
    # the same design on 2026-07-28 has no server-to-client requests: nothing to wait on
    assert explore(Config(cfg.design, "2026-07-28", tr, ids=2, requests=2), liveness=True).ok


def test_a_breaking_stream_is_not_forced_by_fairness():
    # were a stream break a fair move, every hanging POST on 2025-11-25 http would end broken,
    # and the bug above would pass there
    from mcp_inflight.model.eventually import is_fair
    from mcp_inflight.model.session import ACTION

    assert not is_fair(ACTION["break_stream"])
    assert is_fair(ACTION["respond"]) and is_fair(ACTION["arrive"])
    assert not is_fair(ACTION["answer"]) and not is_fair(ACTION["client_sends"])


@pytest.mark.parametrize("rev,tr", PROFILES)
def test_runs_after_respond_is_caught(rev, tr):
    r = explore(Config(MUT["atomic-runs-after-respond"], rev, tr, ids=2, requests=2), liveness=True)
    assert not r.verdict("settles").ok and not r.verdict("no_deadlock").ok
    assert "respond" in [s.action for s in r.verdict("settles").trace]


def test_report_forms_show_the_lasso(tmp_path):
    r = explore(
        Config(MUT["atomic-runs-after-respond"], "2026-07-28", "http", ids=2, requests=2),
        liveness=True,
    )
    text = report.explore_text([r])
    assert "counterexample: settles on atomic-runs-after-respond" in text
    assert "repeat forever" in text
    js = r.to_json()["liveness"]
    assert {x["name"] for x in js} == set(NAMES)
    assert all("loop_start" in x for x in js)
    path = tmp_path / "j.xml"
    report.write_junit(str(path), [r])
    assert 'name="liveness:settles"' in path.read_text() and "repeat forever" in path.read_text()


def test_liveness_off_keeps_the_other_verdicts():
    cfg = Config(ATOMIC, "2025-11-25", "http", ids=2, requests=2)
    a, b = explore(cfg), explore(cfg, liveness=True)
    assert not a.of("liveness")
    assert [(v.name, v.ok) for v in a.verdicts] == [
        (v.name, v.ok) for v in b.verdicts if v.kind != "liveness"
    ]
    assert (a.states, a.transitions) == (b.states, b.transitions)


def test_cross_sender_cancel_invariant_and_hazard():
    from mcp_inflight.model.config import mutants

    ok = explore(Config(ATOMIC, "2026-07-28", "http", ids=2, requests=2))
    assert ok.verdict("cancel_stays_with_sender").ok
    # looking the closed POST's id up matters only in one registry for every POST: in a POST's
    # own scope the lookup finds the connection's own request
    shared = mutants()["atomic-shared-registry"]
    by_id = replace(shared, name="shared-registry-cancel-by-id", cancel_by_connection=False)
    assert explore(Config(shared, "2026-07-28", "http")).verdict("cancel_stays_with_sender").ok
    bad = explore(Config(by_id, "2026-07-28", "http", ids=2, requests=2))
    v = bad.verdict("cancel_stays_with_sender")
    assert not v.ok and v.trace is not None and len(v.trace) == 7
    hz = explore(Config(ATOMIC, "2025-11-25", "stdio", ids=2, requests=2))
    assert not hz.verdict("foreign_cancel_is_inert").ok and hz.ok
