"""The native engine on two threads (``nb_run_par``) against itself on one.

The threads expand a level's states at once and hand their records over in order, so the run is
the one-thread run, field for field: states and their numbering (so every trace), transitions,
depth, deadlocks, coverage, verdicts with their traces, the liveness verdicts and lassos judged
on the graph it keeps, and a search cut short.  Here every batch
of two or more states is split (``parallel_from=1``), so the hand-over is met at every level.
"""

from dataclasses import replace

import pytest

from mcp_inflight.model import DESIGNS, Config, mutants
from mcp_inflight.model import session as S
from mcp_inflight.model.config import liveness_mutants
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import native, native_build

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


@pytest.fixture(autouse=True)
def own_cache(run_tmp, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(run_tmp / "cache"))


def _run(cfg, threads, **kw):
    res = native.search_native(cfg, threads=threads, parallel_from=1, **kw)
    doc = res.to_json()
    doc.pop("seconds")
    return res.engine, doc


def _both(cfg, **kw):
    one_engine, one = _run(cfg, 1, **kw)
    two_engine, two = _run(cfg, 2, **kw)
    assert " on 2 threads" in two_engine and " threads" not in one_engine, (one_engine, two_engine)
    one.pop("engine", None)
    two.pop("engine", None)
    assert two == one, cfg.label
    return one


def _d(name):
    return DESIGNS.get(name) or mutants().get(name) or liveness_mutants()[name]


@pytest.mark.parametrize(
    "design, rev, tr, symmetry, liveness",
    [
        ("atomic", "2025-11-25", "stdio", True, True),
        ("atomic", "2026-07-28", "http", False, True),
        ("unguarded", "2025-11-25", "http", True, False),
        ("check_then_claim", "2026-07-28", "stdio", False, False),
        ("atomic-waits-on-lost", "2025-11-25", "stdio", True, True),
        ("atomic-split-claim", "2025-11-25", "http", False, True),
    ],
)
def test_two_threads_give_the_one_thread_run(design, rev, tr, symmetry, liveness):
    doc = _both(Config(_d(design), rev, tr, 2, 2), symmetry=symmetry, liveness=liveness)
    assert doc["states"] > 1000


def test_two_threads_give_the_one_thread_run_cut_short():
    cfg = Config(DESIGNS["atomic"], "2025-11-25", "http", 2, 2)
    doc = _both(cfg, max_states=5000, liveness=True)
    assert doc["states"] == 5000 and not doc["complete"]


def test_three_ids_on_two_threads():
    _both(Config(DESIGNS["unguarded"], "2026-07-28", "stdio", ids=3, requests=2), symmetry=True)


def test_explore_takes_the_threads_to_the_native_engine():
    from mcp_inflight.proofs.explorer import explore

    cfg = Config(DESIGNS["atomic"], "2025-11-25", "http", 2, 2)  # unreduced: 15k states a level
    assert " on 2 threads" in explore(cfg, engine="native", threads=2, symmetry=False).engine
    assert " threads" not in explore(cfg, engine="native", threads=1, symmetry=False).engine


def test_a_small_batch_stays_on_one_thread():
    """Under ``parallel_from`` states a batch is expanded on the calling thread alone."""
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 1)
    res = native.search_native(cfg, threads=2)
    assert " threads" not in res.engine and res.states < native_build.PARALLEL_FROM


def test_a_model_error_on_a_worker_thread_is_the_one_thread_error(monkeypatch, fresh_tables):
    """A write to an unmasked NONE key (a model bug) met by a worker stops the run with the error
    the one-thread run gives: the same move named."""
    respond = next(a for a in S.ACTIONS if a.name == "respond")
    effect = respond.effect

    def broken(b, s, c, r, i, out):
        return [*effect(b, s, c, r, i, out), Write("running", s.stream[s.rid[r]], False)]

    monkeypatch.setattr(
        S, "ACTIONS", tuple(replace(a, effect=broken) if a is respond else a for a in S.ACTIONS)
    )
    cfg = Config(DESIGNS["atomic"], "2025-11-25", "stdio", 2, 2)
    errors = []
    for threads in (1, 2):
        with pytest.raises(native_build.NativeError, match="unmasked NONE key") as e:
            native.search_native(cfg, threads=threads, parallel_from=1)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and errors[0].startswith("respond")


def _threads_in_a_worker() -> int:
    return native_build.default_threads()


def test_a_pool_worker_keeps_to_one_thread():
    """A worker of the checkers' pools says so, and its searches keep to one thread; a
    process of its own takes both cores (at most two)."""
    import multiprocessing as mp
    import os

    from mcp_inflight.proofs import pool

    with pool.worker_pool(1, mp.get_context("fork")) as ex:
        assert ex.submit(_threads_in_a_worker).result(timeout=60) == 1
    assert not pool.in_worker
    assert native_build.default_threads() == max(1, min(2, os.cpu_count() or 1))
