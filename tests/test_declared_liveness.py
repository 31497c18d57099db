"""Liveness in the one explorer is judged under the fairness the property declares.

``eventually(*fair)`` says: every run that is weakly fair to the named actions reaches the goal.
That a goal state stays reachable from every state is not enough: the way there may need an
action nobody owes (a client's), and a fair run may go round forever without it.  The explorer
looks for a strongly connected component of goal-less states in which every fair move is taken
or somewhere disabled (``proofs/liveness.py:fair_violation``)."""

from __future__ import annotations

import dataclasses

import pytest

from mcp_inflight.model import lease
from mcp_inflight.model.declare import Act, Spec, Var, eventually, reachable, unstuck
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import native_build
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.stepping import loop_text
from support.declared import baton


def _toggle_and_finish(fair: tuple[str, ...], toggle_guard=None) -> Spec:
    """``y`` flips for ever (``toggle``); ``finish`` sets ``x`` at any time.  The goal is
    ``x == 1``, always reachable (``finish`` is always enabled)."""

    def done(b, s):
        """x is set."""
        return s.x == 1

    return Spec(
        "toy",
        "-",
        {},
        (Var("x", 0, 1, 0), Var("y", 0, 1, 0)),
        (
            Act(
                "toggle",
                (),
                toggle_guard or (lambda b, s: True),
                lambda b, s: [Write("y", None, b.Ite(s.y == 0, 1, 0))],
                lambda a: "toggle",
                fair="weak",
            ),
            Act(
                "finish",
                (),
                lambda b, s: s.x == 0,
                lambda b, s: [Write("x", None, 1)],
                lambda a: "finish",
                side="client",
                fair="weak" if "finish" in fair else "none",
            ),
        ),
        (eventually(*fair)(done),),
        {},
    )


def test_a_goal_reachable_only_through_an_unowed_action_is_not_eventually_reached():
    ex = explore(_toggle_and_finish(("toggle",)))
    # a run fair to toggle may toggle for ever and never finish
    assert ex.verdicts["done"] == "fails"
    assert ex.traces["done"] == []  # the initial state already starts such a run


def test_the_same_goal_holds_once_the_action_that_reaches_it_is_fair():
    assert explore(_toggle_and_finish(("toggle", "finish"))).verdicts["done"] == "holds"


def test_a_fair_action_that_is_sometimes_disabled_does_not_save_the_cycle():
    # finish is fair but enabled only while y == 0, and toggle leaves y == 0 every other
    # step: finish is never continuously enabled, so weak fairness does not force it
    spec = _toggle_and_finish(("toggle", "finish"))
    finish = spec.acts[1]
    gated = Act(
        finish.name,
        (),
        lambda b, s: b.And(s.x == 0, s.y == 0),
        finish.effect,
        finish.story,
        side="client",
        fair="weak",
    )
    spec = Spec(spec.model, spec.design, {}, spec.vars, (spec.acts[0], gated), spec.props, {})
    assert explore(spec).verdicts["done"] == "fails"


def test_a_goal_less_dead_end_fails_even_with_every_action_fair():
    # toggle never enabled: in the initial state only finish could move, and it is not owed
    spec = _toggle_and_finish(("toggle",), toggle_guard=lambda b, s: s.y == 1)
    assert explore(spec).verdicts["done"] == "fails"


def test_the_states_where_no_move_is_enabled_are_counted_with_a_shortest_run_to_one():
    ex = explore(_toggle_and_finish(("toggle",), toggle_guard=lambda b, s: s.y == 1))
    # x=0,y=0 (finish enabled) -> x=1,y=0: nothing moves there
    assert ex.deadlocks == 1 and [st["action"] for st in ex.deadlock_trace] == ["finish"]
    assert ex.to_json()["deadlocks"] == 1
    assert explore(_toggle_and_finish(("toggle",))).deadlocks == 0  # toggle always moves
    # a run may end once x is set: that state is then no deadlock
    spec = _toggle_and_finish(("toggle",), toggle_guard=lambda b, s: s.y == 1)
    ended = explore(dataclasses.replace(spec, final=lambda b, s: s.x == 1))
    assert ended.deadlocks == 0 and ended.deadlock_trace is None
    not_there = explore(dataclasses.replace(spec, final=lambda b, s: s.y == 1))
    assert not_there.deadlocks == 1  # a final condition elsewhere leaves the dead end one


# --- the lasso: the trace to the component and the loop a fair run repeats there -------------


def _replay(spec: Spec, steps: list[dict], s=None):
    """The states ``steps`` pass through from ``s`` (default: the initial state)."""
    from mcp_inflight.proofs.stepping import move, take

    b = spec.logic()
    s = spec.initial() if s is None else s
    out = [s]
    for st in steps:
        t = take(spec, s, move(spec, st["action"], **st["args"]), b)
        assert t is not None, st
        s = t[0]
        out.append(s)
    return out


@pytest.mark.parametrize("engine", ["compiled", "native"])
def test_a_lasso_loops_through_its_component_and_back(engine):
    if engine == "native" and not native_build.available():
        pytest.skip("no C compiler")
    spec = _toggle_and_finish(("toggle",))
    ex = explore(spec, engine=engine)
    assert ex.engine == engine
    # from the initial state, toggle for ever: y goes 0 -> 1 -> 0 and x is never set
    assert [st["action"] for st in ex.loops["done"]] == ["toggle", "toggle"]
    states = _replay(spec, ex.loops["done"])
    assert states[-1] == states[0] and {s.y for s in states} == {0, 1}
    # a dead end has no loop: the run stays in its last state
    stuck_spec = _toggle_and_finish(("toggle",), toggle_guard=lambda b, s: s.y == 1)
    stuck = explore(stuck_spec, engine=engine)
    assert stuck.verdicts["done"] == "fails" and stuck.loops["done"] == []
    # a property that holds has no lasso
    assert "done" not in explore(_toggle_and_finish(("toggle", "finish")), engine=engine).loops


def test_a_lassos_text_numbers_its_loop_on_from_the_trace_or_says_it_stays():
    ex = explore(_toggle_and_finish(("toggle",)))
    text = loop_text(len(ex.traces["done"]), ex.loops["done"])
    assert text[0] == "  loop (steps 1-2 repeat forever):"
    assert [ln.split(".")[0] for ln in text if ln.startswith("  ") and ln[2].isdigit()] == [
        "  1",
        "  2",
    ]
    assert loop_text(3, []) == ["  then it stays there for ever: no move it is owed is enabled"]


def test_the_lease_no_ttl_lasso_never_frees_the_crashed_workers_claim():
    from mcp_inflight.model import lease as L

    spec = L.spec("no-ttl")
    ex = explore(spec)
    name = "ids_free_after_lease"
    prefix = _replay(spec, ex.traces[name])
    start = prefix[-1]
    loop = _replay(spec, ex.loops[name], start)
    assert ex.loops[name] and loop[-1] == start  # the loop closes where the trace ends
    goal = next(p for p in spec.props if p.name == name).fn
    b = spec.logic()
    assert not any(goal(b, s) for s in loop)  # and never reaches the goal on the way
    # every move the property is fair to is taken on the loop or disabled somewhere on it
    fair = set(next(p for p in spec.props if p.name == name).fair)
    taken = {st["action"] for st in ex.loops[name]}
    from mcp_inflight.proofs.stepping import successors

    for a in fair - taken:
        assert any(all(m.name != a for m, _, _ in successors(spec, s, b)) for s in loop), a


def test_a_property_cannot_lend_an_action_fairness_its_declaration_withholds():
    """A liveness property names the actions it rests on; each must be declared weakly fair.
    The lease model's liveness rests on ``expire``: with ``expire`` declared ``none`` the
    declaration is refused, naming both (before, the explorer took the property's word and
    judged the run fair to an action nobody declared fair)."""
    sp = lease.spec("fenced")
    assert any(p.kind == "liveness" and "expire" in p.fair for p in sp.props)
    acts = tuple(dataclasses.replace(a, fair="none") if a.name == "expire" else a for a in sp.acts)
    with pytest.raises(ValueError, match="rests on the weak fairness of expire, which its decl"):
        dataclasses.replace(sp, acts=acts)


# --- under symmetry reduction: a component's orbits unfolded ---------------------------------


def _lasso_closes(spec: Spec, ex, name: str) -> None:
    """The reduced run's trace replays, its loop replays from the state it ends in and comes
    back to it, and the goal fails all along."""
    start = _replay(spec, ex.traces[name])[-1]
    loop = _replay(spec, ex.loops[name], start)
    assert loop[-1] == start
    goal = next(p for p in spec.props if p.name == name).fn
    assert not any(goal(spec.logic(), s) for s in loop)


def test_under_reduction_a_component_is_judged_on_its_real_moves():
    spec = baton()
    plain, reduced = explore(spec), explore(spec, symmetry=True)
    assert reduced.symmetry.startswith("reduced: ") and reduced.states < plain.states
    assert plain.verdicts["done"] == reduced.verdicts["done"] == "fails"
    assert len(reduced.traces["done"]) == len(plain.traces["done"]) == 0
    # one orbit, two real states: the loop passes the baton there and back
    assert [st["action"] for st in reduced.loops["done"]] == ["pass", "pass"]
    _lasso_closes(spec, reduced, "done")


def test_judged_on_the_representatives_moves_the_baton_would_be_said_to_finish(monkeypatch):
    """What the unfolding is for: on the reduced graph the baton's one orbit is one state
    with a move back to itself (``pass`` from holder 0, as the representative names it) and
    ``finish`` from holder 1 enabled there, never taken inside: read there, weak fairness
    would force it, and the property would hold."""
    from mcp_inflight.proofs import liveness

    def on_representatives(goal, edges, fair, unfold, renamed):
        found = liveness.fair_violation(goal, edges, fair)
        return None if found is None else (found[0], liveness.Unfolded())

    monkeypatch.setattr(liveness, "fair_violation_reduced", on_representatives)
    assert explore(baton(), symmetry=True).verdicts["done"] == "holds"


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(lambda: lease.spec("no-ttl"), id="lease-no-ttl"),
        pytest.param(lambda: lease.spec("no-ttl", ids=2), id="lease-no-ttl-two-ids"),
        pytest.param(lambda: lease.spec("fenced"), id="lease-fenced"),
        pytest.param(
            lambda: _session_spec("atomic-waits-on-answer", "2025-11-25", "stdio", 1),
            id="session-waits-on-answer",
        ),
        pytest.param(lambda: _session_spec("atomic", "2026-07-28", "http", 2), id="session-atomic"),
    ],
)
def test_liveness_under_reduction_is_the_whole_graphs(spec):
    spec = spec()
    plain, reduced = explore(spec, engine="fastest"), explore(spec, symmetry=True)
    assert reduced.symmetry.startswith("reduced: ") and reduced.states < plain.states
    assert reduced.verdicts == plain.verdicts and not reduced.errors
    assert {k: len(v) for k, v in reduced.traces.items()} == {
        k: len(v) for k, v in plain.traces.items()
    }
    for p in spec.props:
        if p.kind == "liveness" and reduced.verdicts[p.name] == "fails":
            _lasso_closes(spec, reduced, p.name)


def _session_spec(design: str, revision: str, transport: str, ids: int) -> Spec:
    from mcp_inflight.model.config import Config, liveness_mutants
    from mcp_inflight.model.session_spec import spec as session_spec
    from mcp_inflight.proofs.prove import all_designs

    d = {**all_designs(), **liveness_mutants()}[design]
    return session_spec(Config(d, revision, transport, ids, 2))


# --- liveness of the graph itself: a goal that stays reachable, a state that is never stuck ---


def _spin_then_finish(spin_changes: bool) -> Spec:
    """``spin`` is always enabled (it flips ``y``, or with ``spin_changes`` False leaves the
    state as it is); ``finish`` sets ``x`` once ``y == 1`` and nobody owes it.  The goal is
    ``x == 1``: reachable from every state exactly when spinning can reach ``y == 1``."""

    def done(b, s):
        """x is set."""
        return s.x == 1

    spin = (lambda b, s: [Write("y", None, b.Ite(s.y == 0, 1, 0))]) if spin_changes else None
    return Spec(
        "toy",
        "-",
        {},
        (Var("x", 0, 1, 0), Var("y", 0, 1, 0)),
        (
            Act(
                "spin",
                (),
                lambda b, s: s.x == 0,
                spin or (lambda b, s: []),
                lambda a: "spin",
                fair="weak",
            ),
            Act(
                "finish",
                (),
                lambda b, s: b.And(s.x == 0, s.y == 1),
                lambda b, s: [Write("x", None, 1)],
                lambda a: "finish",
                side="client",
            ),
        ),
        (reachable(done), unstuck(done), eventually("spin")(done)),
        {},
    )


def test_reachable_and_unstuck_read_the_graph_and_fail_where_it_says():
    """Spinning reaches ``y == 1``, where finish is enabled: the goal stays reachable and no
    state is stuck, but a run fair to spin alone may spin for ever without finishing."""

    def shaped(spin_changes: bool) -> dict[str, str]:
        sp = _spin_then_finish(spin_changes)
        # one name per shape, to read the three verdicts apart
        named = tuple(dataclasses.replace(p, name=p.shape) for p in sp.props)
        return explore(dataclasses.replace(sp, props=named)).verdicts

    assert shaped(True) == {"reachable": "holds", "unstuck": "holds", "eventually": "fails"}
    # spin changes nothing: y stays 0, finish never enabled; the initial state is stuck (its
    # only move comes back to it) and the goal unreachable
    assert shaped(False) == {"reachable": "fails", "unstuck": "fails", "eventually": "fails"}


def test_a_stuck_state_stays_and_an_unreachable_goal_runs_on_without_it():
    sp = _spin_then_finish(spin_changes=False)
    named = tuple(dataclasses.replace(p, name=p.shape) for p in sp.props)
    ex = explore(dataclasses.replace(sp, props=named))
    # the initial state is stuck: its one move leaves it as it is, and the run repeats it
    assert ex.traces["unstuck"] == [] and [s["action"] for s in ex.loops["unstuck"]] == ["spin"]
    # nothing reaches the goal from the initial state either: the same run
    assert ex.traces["reachable"] == [] and ex.loops["reachable"] == ex.loops["unstuck"]
    # a stuck state with no move at all: the run stops there, its loop empty
    stop = dataclasses.replace(
        sp,
        props=named,
        acts=(dataclasses.replace(sp.acts[0], guard=lambda b, s: s.x == 1), sp.acts[1]),
    )
    assert explore(stop).loops["unstuck"] == []


def test_a_liveness_shape_on_fairness_or_unknown_is_refused():
    def done(b, s):
        """x is set."""
        return s.x == 1

    with pytest.raises(ValueError, match="liveness on no fairness"):
        dataclasses.replace(reachable(done), fair=("spin",))
    with pytest.raises(ValueError, match="unknown liveness shape"):
        dataclasses.replace(reachable(done), shape="sometime")


@pytest.mark.skipif(not native_build.available(), reason="no C compiler")
def test_the_native_engine_reads_final_states_as_the_compiled_engine_does():
    spec = _toggle_and_finish(("toggle",), toggle_guard=lambda b, s: s.y == 1)
    ended = dataclasses.replace(spec, final=lambda b, s: s.x == 1)
    for engine in ("native", "compiled"):
        ran = explore(ended, engine=engine)
        assert ran.deadlocks == 0 and ran.deadlock_trace is None, engine
        assert ran.engine.startswith(engine), ran.engine
    # a final condition elsewhere leaves the dead end one, on both, with the same trace
    elsewhere = dataclasses.replace(spec, final=lambda b, s: s.y == 1)
    native_run, compiled_run = (explore(elsewhere, engine=e) for e in ("native", "compiled"))
    assert native_run.deadlocks == compiled_run.deadlocks == 1
    assert native_run.deadlock_trace == compiled_run.deadlock_trace
    assert [st["action"] for st in native_run.deadlock_trace] == ["finish"]
    assert explore(ended, engine="fastest").engine.startswith("native")
