"""The declared models' native engine on two threads (``nb_run_par``) against itself on one.

The threads expand a level's states at once and hand their records over in order, so the run is
the one-thread run, field for field: states and their numbering (so every trace), transitions,
depth, coverage, verdicts with their traces, the liveness verdicts, lassos and counts of states
away judged on the graph it keeps, deadlocks, errors, a search cut short by ``max_states`` or
stopped by ``until``, with symmetry reduction and without.  Here every batch of four states or
more is split (``parallel_from=1``), so the hand-over is met at nearly every level; C that
hands the moves over in the wrong order is caught, and a model error met on a worker thread is
the one the one-thread run reports.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mcp_inflight.model.declare import Act, Spec, Var
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import native_build
from mcp_inflight.proofs.native_spec import NativeSpecError, search_native
from support.declared import baton, wrong_c
from support.declared import model as _model

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")

#: what a run's record holds that is no finding: its timings and the threads it took
_NOT_FOUND = {"spec", "seconds", "build_seconds", "search_seconds", "c_seconds", "threads"}


def _found(ex: Any) -> dict[str, Any]:
    """Every field of the run's record but its timings and threads."""
    return {f.name: getattr(ex, f.name) for f in dataclasses.fields(ex) if f.name not in _NOT_FOUND}


def _both(spec: Spec, **kw: Any) -> dict[str, Any]:
    """The run of ``spec`` on one thread and on two, every batch split: the same findings; the
    one-thread run's."""
    one = search_native(spec, threads=1, **kw)
    two = search_native(spec, threads=2, parallel_from=1, **kw)
    assert one.threads == 1 and two.threads == 2, (one.threads, two.threads)
    assert one.engine == two.engine == "native"
    assert _found(two) == _found(one), spec.label()
    return _found(one)


def _session(design: str, revision: str, transport: str) -> Spec:
    from mcp_inflight.model.config import DESIGNS, Config, liveness_mutants
    from mcp_inflight.model.session_spec import spec

    d = {**DESIGNS, **liveness_mutants()}[design]
    return spec(Config(d, revision, transport, ids=2, requests=2))


#: (model, design, bounds): a safe design and a mutant, liveness and none, tasks at one request
DECLARED = [
    ("lease", "fenced", ()),
    ("lease", "unfenced", ()),
    ("rounds", "no-expiry", ()),
    ("resume", "shared-store", ()),
    ("tasks", "fresh-bound", (("requests", 1),)),
    ("subscriptions", "by-listen-id", ()),
]


@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize(
    ("model", "design", "bounds"), DECLARED, ids=[f"{m}-{d}" for m, d, _ in DECLARED]
)
def test_two_threads_give_the_one_thread_run_on_the_declared_models(
    model: str, design: str, bounds: tuple[Any, ...], symmetry: bool
) -> None:
    doc = _both(_model(model).spec(design, **dict(bounds)), symmetry=symmetry)
    assert doc["states"] > 100


@pytest.mark.parametrize(
    ("design", "revision", "transport", "symmetry"),
    [
        ("atomic", "2025-11-25", "stdio", True),
        ("atomic", "2026-07-28", "http", False),
        ("unguarded", "2025-11-25", "stdio", False),
        # an ``eventually`` that fails: a lasso walked on the kept graph's edges
        ("atomic-waits-on-answer", "2025-11-25", "stdio", True),
        ("atomic-waits-on-answer", "2025-11-25", "stdio", False),
        # ``reachable`` and ``unstuck`` that fail: the states away counted
        ("atomic-runs-after-respond", "2026-07-28", "http", True),
    ],
)
def test_two_threads_give_the_one_thread_run_on_the_session(
    design: str, revision: str, transport: str, symmetry: bool
) -> None:
    doc = _both(_session(design, revision, transport), symmetry=symmetry)
    assert doc["states"] > 1000
    if design == "atomic-waits-on-answer":
        assert doc["verdicts"]["requests_answered"] == "fails" and doc["loops"]
    if design == "atomic-runs-after-respond":
        assert doc["away"]["settles"] > 0 and doc["away"]["no_deadlock"] > 0


@pytest.mark.parametrize("symmetry", [False, True])
def test_two_threads_give_the_one_thread_run_cut_short(symmetry: bool) -> None:
    doc = _both(_session("atomic", "2025-11-25", "http"), symmetry=symmetry, max_states=5000)
    assert doc["states"] == 5000 and not doc["complete"]
    doc = _both(_model("lease").spec("fenced"), symmetry=symmetry, max_states=300)
    assert doc["states"] == 300 and not doc["complete"]


def test_two_threads_stop_where_one_stops_on_until() -> None:
    spec = _model("lease").spec("unfenced")
    doc = _both(spec, until=["single_writer"])
    assert doc["verdicts"]["single_writer"] == "fails" and not doc["complete"]


def test_a_small_batch_stays_on_one_thread() -> None:
    """Under ``parallel_from`` states a batch is expanded on the calling thread alone."""
    spec = _model("subscriptions").spec("graceful-response")
    ran = search_native(spec, threads=2)
    assert ran.threads == 1 and ran.states < native_build.PARALLEL_FROM
    assert search_native(baton(), threads=2, parallel_from=1).threads == 1  # levels of 1 or 2


def _grid(boom: list[tuple[int, int]]) -> Spec:
    """``a`` and ``b`` count 0..7 (``inc_a``, then ``inc_b``): level ``d`` holds the states of
    ``a + b == d``, ``a`` falling, so its later half (a worker thread's part of a split batch)
    holds the states of small ``a``.  ``boom_<a>_<b>`` is enabled at that state alone and writes
    a value wider than a byte (a model bug)."""
    acts = [
        Act("inc_a", (), lambda b, s: s.a < 7, lambda b, s: [Write("a", None, s.a + 1)], str),
        Act("inc_b", (), lambda b, s: s.b < 7, lambda b, s: [Write("b", None, s.b + 1)], str),
    ]
    for x, y in boom:
        acts.append(
            Act(
                f"boom_{x}_{y}",
                (),
                lambda b, s, x=x, y=y: b.And(s.a == x, s.b == y),
                lambda b, s: [Write("c", None, s.a + 200)],
                str,
            )
        )
    vs = (Var("a", 0, 7, 0), Var("b", 0, 7, 0), Var("c", 0, 1, 0))
    return Spec("grid", "-", {}, vs, tuple(acts), (), {})


@pytest.mark.parametrize(
    ("boom", "named"),
    [
        # the error only in the later half of level 7: met by the worker thread alone
        ([(0, 7)], "boom_0_7"),
        # one in each half: the first in the order of the states is the one reported
        ([(0, 7), (5, 2)], "boom_5_2"),
        # two in the worker's half, the later one's move first in the table
        ([(0, 7), (2, 5)], "boom_2_5"),
    ],
)
def test_a_model_error_on_a_worker_thread_is_the_one_thread_error(
    boom: list[tuple[int, int]], named: str
) -> None:
    spec = _grid(boom)
    errors = []
    for threads in (1, 2):
        with pytest.raises(NativeSpecError, match="wider than a byte") as e:
            search_native(spec, threads=threads, parallel_from=1)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and errors[0].startswith(named), errors


def test_the_grid_without_a_bug_is_searched_alike() -> None:
    doc = _both(_grid([]))
    assert doc["states"] == 64 and doc["depth"] == 14


def test_a_hand_over_in_the_wrong_order_is_caught(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """C whose threads record each state's moves last first: the same states and counts, but
    numbered otherwise, so traces that differ; the comparison fails."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    spec = _session("atomic", "2025-11-25", "stdio")
    one = search_native(spec, threads=1)
    wrong_c(
        monkeypatch,
        "for (int j = 0; j < NM; j++) {\n            int f = MOVES[j](p, q, r->need_t, res, &w->err);",
        "for (int j = NM - 1; j >= 0; j--) {\n            int f = MOVES[j](p, q, r->need_t, res, &w->err);",
    )
    assert _found(search_native(spec, threads=1)) == _found(one)  # nb_run is untouched
    two = search_native(spec, threads=2, parallel_from=1)
    assert two.threads == 2
    assert (two.states, two.transitions, two.coverage) == (
        one.states,
        one.transitions,
        one.coverage,
    )
    assert _found(two) != _found(one)
