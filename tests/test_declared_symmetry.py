"""Symmetry over declared sorts (``proofs/declared_symmetry.py``) and the one explorer's
reduction by it (``explore(spec, symmetry=True)``).

* On the lease model (every design) and the session model read as a Spec (the safe design and a
  mutant, both revisions): the reduced run has the verdicts and shortest trace lengths of the
  unreduced one, fewer states where a sort has two values, and traces that replay.
* A rule that treats one value of a sort specially (a guard, an effect, a property, an output) is
  named by the check, and the explorer then refuses the reduction; forcing the reduction past a
  failed check changes a verdict, which is what the check is for.
* A declaration that leaves out a sort the rules use (a ``ref``, the ``ordered`` instances)
  fails the check, and so do arrivals out of order and a move that frees a used slot.
* Every renaming is a bijection on states, and the canonical form is constant on orbits.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import pytest

from mcp_inflight.model import lease, lease_state
from mcp_inflight.model.config import Config
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import declared_symmetry as ds
from mcp_inflight.proofs.compiled_spec import compile_spec
from mcp_inflight.proofs.declared_symmetry import symmetry_of
from mcp_inflight.proofs.explorer import Explored, explore
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.walk import transitions_out
from support.declared import (
    arrivals_anywhere,
    kill_worker_0_on_pause,
    property_about_worker_0,
    release_frees_its_slot,
    spare_worker_0,
    with_output,
)


def _session(design: str, revision: str, ids: int, transport: str = "http") -> Spec:
    """The session declaration without its liveness property (judged under reduction in
    ``tests/test_declared_liveness.py``; here the safety properties, on more designs)."""
    return safety(session_spec(Config(all_designs()[design], revision, transport, ids, 2)))


def _lengths(res: Explored) -> dict[str, int]:
    return {k: len(v) for k, v in res.traces.items()}


def same_verdicts(sp: Spec) -> tuple[Explored, Explored]:
    """The unreduced and reduced runs of ``sp``, checked to agree.  The unreduced run is on the
    native engine where a C compiler is and it runs the spec (it finds what the compiled engine
    finds, tests/test_native_spec.py, in a fraction of the time), else on the compiled one; the
    reduced run is the compiled engine's (the native one does not reduce a declared model)."""
    plain = explore(sp, engine="fastest")
    reduced = explore(sp, symmetry=True)
    assert reduced.symmetry.startswith("reduced: "), reduced.symmetry
    assert not reduced.errors and not plain.errors, (reduced.errors, plain.errors)
    assert reduced.verdicts == plain.verdicts, sp.label()
    assert _lengths(reduced) == _lengths(plain), sp.label()
    assert reduced.depth == plain.depth
    assert {a for a, n in reduced.coverage.items() if n} == {
        a for a, n in plain.coverage.items() if n
    }
    return plain, reduced


def safety(sp: Spec) -> Spec:
    """``sp`` without its liveness properties (judged under reduction in
    ``tests/test_declared_liveness.py``)."""
    return dataclasses.replace(sp, props=tuple(p for p in sp.props if p.kind != "liveness"))


@cache
def lease_runs(design: str) -> tuple[Explored, Explored]:
    """:func:`same_verdicts` on the lease's safety properties at ``design``, once per test
    process: the runs are only read, and only by tests that patch nothing."""
    return same_verdicts(safety(lease.spec(design)))


@cache
def session_runs(
    design: str, revision: str, ids: int, transport: str = "http"
) -> tuple[Explored, Explored]:
    """:func:`same_verdicts` on the session declaration, once per test process: the runs are
    only read, and only by tests that patch nothing."""
    return same_verdicts(_session(design, revision, ids, transport))


@pytest.fixture(scope="module")
def lease_symmetry() -> ds.SymmetryResult:
    """The check of the lease declaration as ``lease.spec()`` gives it, liveness included (set
    up before a test body patches the model; no test changes the result)."""
    return symmetry_of(lease.spec())


@pytest.mark.parametrize("design", list(lease_state.DESIGNS))
def test_lease_reduced_agrees(design: str) -> None:
    plain, reduced = lease_runs(design)
    assert reduced.states < plain.states  # two workers: swapped states merge


def test_lease_two_ids_agrees_and_fails_like_the_plain_run() -> None:
    plain, reduced = same_verdicts(safety(lease.spec("unfenced", ids=2)))
    assert reduced.states < plain.states
    assert plain.broken() and reduced.broken() == plain.broken()


def test_lease_hazard_run_agrees() -> None:
    plain, reduced = same_verdicts(safety(lease.spec("fenced", failover=1)))
    assert reduced.states < plain.states


def test_a_model_with_liveness_is_reduced_too() -> None:
    """Liveness is judged on the reduced graph with each component's orbits unfolded where a
    run can go round in them (``tests/test_declared_liveness.py`` shows why and compares)."""
    sp = lease.spec("no-ttl")
    assert any(p.kind == "liveness" for p in sp.props)
    run = explore(sp, symmetry=True)
    assert run.symmetry.startswith("reduced: ")
    plain = explore(sp)
    assert run.states < plain.states and run.verdicts == plain.verdicts


#: 2025-11-25 at one id: 17-39 thousand states a run, twice (reduced and not): the slow set
@pytest.mark.parametrize(
    "revision", [pytest.param("2025-11-25", marks=pytest.mark.slow), "2026-07-28"]
)
@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_session_one_id_agrees(design: str, revision: str) -> None:
    plain, reduced = session_runs(design, revision, 1)
    assert reduced.states < plain.states  # one id: sent instances renamed


@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_session_two_ids_agrees(design: str) -> None:
    plain, reduced = session_runs(design, "2026-07-28", 2)
    assert reduced.states < plain.states
    if design == "unguarded":
        assert plain.broken()


def test_session_stdio_two_ids_agrees() -> None:
    """stdio: the renaming is followed by the model's own ``canon`` (send times by rank)."""
    plain, reduced = session_runs("atomic", "2026-07-28", 2, "stdio")
    assert reduced.states < plain.states


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_reduction_keeps_one_state_per_orbit(transport: str) -> None:
    """One state per orbit on 2026-07-28 at 2 x 2: the counts of the session's former engines,
    whose key was exact where only the clients' ids use the id sort, as here.  A fresh
    instance's ``rid`` is left as it is by a renaming; renamed, it made a second state of each
    orbit with an unsent instance (2,379 states against 2,311 over http)."""
    _, reduced = session_runs("atomic", "2026-07-28", 2, transport)
    assert reduced.states == {"http": 2_311, "stdio": 3_026}[transport]


@pytest.mark.slow
def test_session_2025_two_ids_agrees() -> None:
    """2025-11-25 http at 2 x 2 (310 thousand states unreduced: on the native engine where a
    compiler is, else 50-80 s compiled): the mutant, whose failures the reduced run must find
    too; atomic at two ids runs on 2026-07-28 above."""
    plain, reduced = same_verdicts(_session("unguarded", "2025-11-25", 2))
    assert reduced.states < plain.states
    assert plain.broken() and reduced.broken() == plain.broken()


# --- the check names what breaks symmetry, and the explorer refuses -------------------------


def refused(
    sp: Spec, rule: str, max_states: int = 2_000_000, engine: str | None = None
) -> tuple[ds.SymmetryResult, Explored]:
    """The check of ``sp`` fails on ``rule`` (a prefix of its name), and the explorer runs
    unreduced, saying so: the check's result and that run.  The plain run it is compared with
    is on ``engine`` (default: the explorer's; ``fastest``: native where a C compiler is, which
    finds the states the compiled engine finds, tests/test_native_spec.py)."""
    res = symmetry_of(sp)
    assert not res.ok and res.broken is not None
    assert res.broken.rule.startswith(rule), res.broken.text()
    run = explore(sp, max_states, symmetry=True)
    assert run.symmetry.startswith("unreduced: ") and rule in run.symmetry
    assert run.states == explore(sp, max_states, engine=engine).states
    return res, run


def test_guard_that_spares_worker_0(
    monkeypatch: pytest.MonkeyPatch, lease_symmetry: ds.SymmetryResult
) -> None:
    assert lease_symmetry.ok  # the unpatched model
    spare_worker_0(monkeypatch)  # crash, pause and resume
    res, _ = refused(lease.spec(), "the guard of ")
    assert res.broken is not None and res.broken.rule.split()[-1] in ("crash", "pause", "resume")
    assert "worker 0->1" in res.broken.renaming


def test_effect_that_kills_worker_0_on_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    kill_worker_0_on_pause(monkeypatch)
    res, _ = refused(lease.spec(), "the effect of pause")
    assert res.broken is not None and "pause(w=" in res.broken.move


def test_property_about_worker_0(monkeypatch: pytest.MonkeyPatch) -> None:
    property_about_worker_0(monkeypatch)
    sp = safety(lease.spec())
    _, run = refused(sp, "property first_worker_never_dies_alone")
    assert run.verdicts["first_worker_never_dies_alone"] == "fails"
    # past a failed check, the reduction keeps (alive, dead) for (dead, alive): it misses the failure
    passed = dataclasses.replace(symmetry_of(sp), broken=None)
    monkeypatch.setattr(ds, "check", lambda *a, **k: passed)
    assert explore(sp, symmetry=True).verdicts["first_worker_never_dies_alone"] == "holds"


def test_output_naming_a_sort_is_renamed_only_when_declared() -> None:
    refused(with_output(lease.spec(), "pause", ()), "the output of pause")
    assert symmetry_of(with_output(lease.spec(), "pause", (("who", "worker"),))).ok


def test_session_guard_that_spares_id_0() -> None:
    sp = _session("atomic", "2026-07-28", 2)
    a = next(x for x in sp.acts if "i" in dict(x.params))
    guard = a.guard

    def spare(b: Any, s: Any, **args: int) -> Any:
        return b.And(guard(b, s, **args), args["i"] != 0)

    new = dataclasses.replace(a, guard=spare)
    bad = dataclasses.replace(sp, acts=tuple(new if x is a else x for x in sp.acts))
    refused(bad, f"the guard of {a.name}", engine="fastest")


# --- the declaration must name every sort the rules rename -----------------------------------


def test_session_ids_need_their_ref() -> None:
    sp = _session("atomic", "2026-07-28", 2)
    vs = tuple(dataclasses.replace(v, ref=None) if v.name == "rid" else v for v in sp.vars)
    assert not symmetry_of(dataclasses.replace(sp, vars=vs)).ok


@pytest.mark.parametrize("which", ["lease", "session"])
def test_ordered_instances_are_not_symmetric(which: str, request: pytest.FixtureRequest) -> None:
    sp = lease.spec() if which == "lease" else _session("atomic", "2026-07-28", 1)
    res = symmetry_of(dataclasses.replace(sp, ordered=()))
    assert res.broken is not None and res.broken.rule.startswith("the guard of ")
    assert "inst 0->1" in res.broken.renaming
    # the check of ``sp`` itself (for the session, in the text of the reduced run: "reduced: "
    # and the check's text)
    if which == "lease":
        text = request.getfixturevalue("lease_symmetry").text()
    else:
        text = session_runs("atomic", "2026-07-28", 1)[1].symmetry
    assert "inst renamed only among its used slots" in text


def test_arrivals_out_of_order_break_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    arrivals_anywhere(monkeypatch)
    refused(lease.spec(), "the effect of arrive (the order of inst")


def test_a_move_that_frees_a_used_slot_breaks_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    release_frees_its_slot(monkeypatch)
    # (instances that come back fresh take the fence past its bound: a short run says enough)
    rule = "the effect of release (it frees a used slot of inst"
    refused(lease.spec(), rule, 20_000, engine="fastest")


def test_a_sort_left_out_is_not_renamed() -> None:
    sp = dataclasses.replace(safety(lease.spec()), asymmetric=(("worker", "a test leaves it out"),))
    res = symmetry_of(sp)
    assert res.ok and "worker left out: a test leaves it out" in res.text()
    plain, fewer = same_verdicts(sp)
    assert fewer.states < plain.states  # instances still renamed
    assert fewer.states > lease_runs("fenced")[1].states  # lease.spec()'s design


# --- renamings and the canonical form ---------------------------------------------------------


def _reachable(sp: Spec) -> set[Any]:
    """The reachable states of ``sp``, walked on its generated rules (the states the concrete
    reading reaches: tests/test_compiled_spec.py)."""
    out = {sp.initial()}
    out.update(post for _, _, post, _ in transitions_out(sp, compile_spec(sp).fire))
    return out


@pytest.mark.parametrize("which", ["lease", "session"])
def test_renaming_is_a_bijection_and_canon_is_constant_on_orbits(which: str) -> None:
    sp = lease.spec("fenced", ids=2) if which == "lease" else _session("atomic", "2026-07-28", 2)
    states = list(_reachable(sp))
    whole = ds.group(sp, (2,))  # every renaming, instances included
    assert len(whole) == (8 if which == "lease" else 4)
    for pi in whole:
        fn, inverse = ds.renamer(sp, pi), ds.renamer(sp, _inverse(pi))
        image = [fn(s) for s in states]
        assert len(set(image)) == len(states), str(pi)
        assert all(inverse(t) == s for s, t in zip(states, image, strict=True)), str(pi)
    canon = ds.Canon(sp)
    # each state's canonical form, computed once (the states of one orbit list one another)
    canonical: dict[Any, Any] = {}

    def canon_of(x: Any) -> Any:
        c = canonical.get(x)
        if c is None:
            c = canonical[x] = canon(x)
        return c

    for s in states:
        c = canon_of(s)
        group, fns = canon.group(s)
        orbit = {fn(s) for fn in fns}
        assert c in orbit
        assert all(canon_of(t) == c for t in orbit)
        assert canon.relating(c, s) is not None


def _inverse(pi: ds.Renaming) -> ds.Renaming:
    out = []
    for sort, p in pi.perm:
        inv = [0] * len(p)
        for k, to in enumerate(p):
            inv[to] = k
        out.append((sort, tuple(inv)))
    return ds.Renaming(tuple(out))


def test_generators_per_sort() -> None:
    sp = lease.spec("fenced", ids=3)
    gens = [str(g) for g in ds.generators(sp)]
    assert gens == ["id 0->1, 1->0", "id 0->1, 1->2, 2->0", "worker 0->1, 1->0"]
    assert ds.sorts(sp) == {"id": 3, "worker": 2} and ds.ordered(sp) == {"inst": 2}
    assert str(ds.generators(sp, (2,))[-1]) == "inst 0->1, 1->0"
    assert ds.generators(sp, (1,)) == ds.generators(sp)  # one used instance: nothing to swap


def test_replay_refuses_a_trace_that_leaves_its_orbit() -> None:
    sp = lease.spec("unfenced")
    canon = ds.Canon(sp)
    init = canon(sp.initial())
    m = next(m for m in sp.moves() if m.name == "arrive" and m.kw == {"r": 0, "w": 0, "i": 0})
    post = canon(ds.take(sp, sp.initial(), m, sp.logic())[0])
    steps, _, wrong = ds.replay(sp, canon, [init, post], [(-1, None, None), (0, m, {})], 1)
    assert wrong is None and len(steps) == 1
    _, _, wrong = ds.replay(sp, canon, [init, init], [(-1, None, None), (0, m, {})], 1)
    assert wrong is not None and "leaves the reduced run's orbit" in wrong


def test_nothing_to_rename_runs_unreduced_without_a_check(monkeypatch: pytest.MonkeyPatch) -> None:
    sp = lease.spec(workers=1, requests=1)
    monkeypatch.setattr(ds, "check", None)  # not called
    run = explore(sp, symmetry=True)
    assert run.symmetry.startswith("unreduced: no declared sort") and not run.errors
    assert run.states == explore(sp).states
