"""Liveness in the one explorer is judged under the fairness the property declares.

``eventually(*fair)`` says: every run that is weakly fair to the named actions reaches the goal.
That a goal state stays reachable from every state is not enough: the way there may need an
action nobody owes (a client's), and a fair run may go round forever without it.  The explorer
looks for a strongly connected component of goal-less states in which every fair move is taken
or somewhere disabled (``proofs/explorer.py:_fair_violation``)."""

from __future__ import annotations

from mcp_inflight.model.logic import Write
from mcp_inflight.model.small import Act, Spec, Var, eventually
from mcp_inflight.proofs.explorer import explore


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
