"""model/tasks.py: the task lifecycle of both revisions, composed with requests.

``fresh-bound`` holds every property and reaches every witness (explored, and proved by
induction at the default bounds); each mutant breaks exactly the properties it is declared to
break, each with a shortest trace whose length and last move are asserted here; and the
sensitivity cells of the model are all ``broken (as it must be)``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mcp_inflight.model import tasks
from mcp_inflight.proofs import declared as checker
from mcp_inflight.proofs.declared import explore, prove, trace_text

_EXPLORED: dict[str, checker.Explored] = {}


def _explored(design: str) -> checker.Explored:
    """``design`` explored once, on the engine ``check`` runs (native where a C compiler is: it
    finds what the compiled engine finds, ``tests/test_native_spec.py``)."""
    if design not in _EXPLORED:
        _EXPLORED[design] = explore(tasks.spec(design), engine="fastest")
    return _EXPLORED[design]


def _failing(res):
    return {p.name for p in res.spec.props if res.verdicts[p.name] == "fails"}


#: mutant -> property -> (length of the shortest trace, its last action)
TRACES = {
    "derived-ids": {
        "status_reaches_requester": (5, "read"),
        "cancel_hits_target": (5, "tcancel"),
        "result_on_every_read": (6, "read"),
    },
    "global": {
        "status_reaches_requester": (3, "list"),
        "cancel_hits_target": (3, "foreign"),
    },
    "cancel-reaches-task": {
        "cancel_hits_target": (3, "ncancel"),
        "request_keys_die_with_request": (2, "create"),
    },
    "not-sticky": {"no_status_after_terminal": (4, "finish")},
    "result-once": {"result_on_every_read": (5, "read")},
    # the liveness trace leads to where a fair run can stay away from the goal for ever (here: a
    # task with no ttl asking for input and answered, round and round; nothing ends it)
    "unbounded-ttl": {"every_task_ends": (4, "ask"), "tasks_end": (3, "create")},
}


def test_the_safe_design_holds_everything_and_reaches_every_witness():
    res = _explored("fresh-bound")
    assert res.ok, res.verdicts
    assert not res.errors
    assert all(v == "holds" for k, v in res.verdicts.items() if k.startswith("aux:"))
    assert all(res.coverage.values()), res.coverage
    # each terminal state is reached, on each revision where it has its own path
    assert res.traces["result_read_2025"][-1]["action"] == "read"
    assert res.traces["result_read_2026"][-1]["action"] == "read"
    assert res.traces["cancel_honoured"][-1]["action"] == "honour"
    assert res.traces["cancelled_by_session_end"][-1]["action"] == "end"
    assert res.traces["task_expired"][-1]["action"] == "expire"
    assert res.traces["late_finish_kept_cancelled"][-1]["action"] == "finish"
    json.dumps(res.to_json())


def test_the_safe_design_is_proved_at_its_bounds():
    res = prove(tasks.spec("fresh-bound"))
    assert res.ok, res.verdicts
    assert not res.dropped
    safe = tasks.spec("fresh-bound")
    invariants = {p.name for p in safe.props if p.kind in ("always", "step")}
    assert set(res.verdicts) >= invariants & set(tasks.BROKEN_BY)
    assert "tasks_end" not in res.verdicts  # liveness: the explorer's to judge, not the prover's


def test_the_ttl_is_what_ends_a_task_nobody_finishes():
    """``tasks_end`` rests on the weak fairness of the ttl's expiry: on the safe design, judged
    without it, a task waiting for input (its client never answering, or its work asking again
    after each answer) is a fair run that never ends."""
    sp = tasks.spec("fresh-bound")
    (live,) = [p for p in sp.props if p.name == "tasks_end"]
    assert live.kind == "liveness" and set(live.fair) == {"finish", "honour", "expire"}
    without = replace(live, fair=("finish", "honour"))
    res = explore(
        replace(sp, props=tuple(without if p is live else p for p in sp.props)), engine="fastest"
    )
    assert res.verdicts["tasks_end"] == "fails"
    assert res.verdicts["every_task_ends"] == "holds"  # the way out is there; nothing owes it


@pytest.mark.parametrize("design", sorted(TRACES))
def test_each_mutant_breaks_what_it_is_declared_to_break(design):
    res = _explored(design)
    assert _failing(res) == set(TRACES[design])
    for name, (length, last) in TRACES[design].items():
        tr = res.traces[name]
        assert (len(tr), tr[-1]["action"]) == (length, last), trace_text(tr)
        assert tr[0]["action"] == "send"


def test_broken_by_names_exactly_what_the_mutants_break():
    declared = {(p, d) for p, ds in tasks.BROKEN_BY.items() for d in ds}
    found = {(p, d) for d, ps in TRACES.items() for p in ps}
    assert declared <= found
    safe = tasks.spec()
    assert set(tasks.BROKEN_BY) == {
        p.name for p in safe.props if p.kind in ("always", "step", "liveness")
    }


def test_derived_ids_confuse_two_tasks_of_one_requester():
    """The id reused after its CreateTaskResult names the second task: the first task's poll
    is answered with the second's status."""
    tr = _explored("derived-ids").traces["status_reaches_requester"]
    assert [s["action"] for s in tr] == ["send", "create", "send", "create", "read"]
    assert tr[0]["args"]["c"] == tr[2]["args"]["c"] == 0
    assert "tab[t0]: r0 -> r1" in "\n".join(trace_text(tr))


def test_the_sensitivity_cells_are_all_broken(monkeypatch):
    from mcp_inflight.proofs import sensitivity
    from mcp_inflight.proofs.outcome import Word

    # the whole runs this module keeps stand in for the early-stopped ones sensitivity asks for
    monkeypatch.setattr(checker, "explore", lambda sp, until=None: _explored(sp.design))
    cells = sensitivity.small("tasks")
    assert cells and all(c.word is Word.BROKEN for c in cells), [
        (c.prop, c.design, c.word) for c in cells
    ]
    assert {c.prop for c in cells} == set(tasks.BROKEN_BY)


def test_the_server_rules_read_no_ghost():
    from mcp_inflight.proofs import discipline

    assert discipline.small(tasks.spec()).passed


def test_check_prints_a_liveness_failure_as_its_lasso(capsys):
    """``check`` on the mutant: the trace to where the fair run's loop starts, then the loop
    (the native engine's, where a C compiler is, as the compiled engine's)."""
    from mcp_inflight.cli import main

    args = ["--design", "unbounded-ttl", "--no-prove", "--no-sensitivity"]
    assert main(["check", "--model", "tasks", *args]) == 1
    out = capsys.readouterr().out
    lasso = out[out.index("counterexample: tasks_end") :]
    assert "  3. the server answers r0 CreateTaskResult" in lasso
    assert "  loop (steps 4-5 repeat forever):" in lasso
    assert lasso.index("4. r0's task needs input") < lasso.index("5. r0's requester answers")
