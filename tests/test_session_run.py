"""The one explorer's run of the session declaration, read as the session's run record
(``proofs/session_run.py``), equals the session engine's record (unreduced, compiled, liveness
judged), field for field in its JSON: states, transitions, coverage, every verdict with its
trace (rebuilt through the session's own step and told by the session's trace text), the
liveness lassos and where their loops start, and the deadlocks with the trace to the first: the
declaration's ``final`` states are the session's settled ones, so the one explorer counts a state
with no move as a deadlock only where it is not settled, as the session's engines count one
(the designs here have none; with ``respond``, ``emit`` and the session's end taken out they
have many, and the count and the first one's trace are compared there too, the native and the
compiled engine's reduced runs with each other).  Only the time is apart.
"""

from __future__ import annotations

import pytest

import mcp_inflight.model.session_spec as session_spec
import mcp_inflight.proofs.compiled_model as compiled_model
import mcp_inflight.proofs.session_search as session_search
from mcp_inflight.model import step
from mcp_inflight.model.config import Config, client_for, liveness_mutants
from mcp_inflight.model.eventually import fair_actions
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_spec import spec
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.session_run import run_result

DESIGNS = {**all_designs(), **liveness_mutants()}
#: not compared: the time
APART = ("seconds",)


def _records(design: str, revision: str, transport: str, ids: int) -> tuple[dict, dict]:
    cfg = Config(DESIGNS[design], revision, transport, ids, 2, client_for("reusing", revision))
    ref = explore(cfg, symmetry=False, progress=False, engine="compiled", liveness=True)
    mine = run_result(cfg, explore(spec(cfg)), False)
    a, b = ref.to_json(), mine.to_json()
    for k in APART:
        a.pop(k), b.pop(k)
    return a, b


@pytest.mark.parametrize(
    "design, revision, transport, ids",
    [
        ("atomic", "2026-07-28", "http", 2),
        ("unguarded", "2026-07-28", "stdio", 2),
        ("atomic-shared-registry", "2026-07-28", "http", 2),
        ("atomic-runs-after-respond", "2025-11-25", "stdio", 1),  # settles, no_deadlock fail
        ("atomic-waits-on-answer", "2025-11-25", "http", 1),  # requests_answered fails
    ],
)
def test_the_record_is_the_session_engines(design, revision, transport, ids):
    ref, mine = _records(design, revision, transport, ids)
    assert mine == ref
    failed = [v for kind in ("invariants", "liveness") for v in mine[kind] if not v.get("holds")]
    assert failed or design == "atomic"  # the mutants' failures are among what is compared


@pytest.fixture
def stuck(monkeypatch):
    """The session without ``respond``, ``emit`` and the session's end (as
    ``tests/test_explore.py`` takes them out), in its engines, its step and its declaration: an
    admitted request whose cancel was spent before its admission has nothing left to do, yet it
    is unfinished -- a deadlock."""
    gone = ("respond", "emit", "end_session")

    def reduced(cfg):
        return tuple(a for a in actions_for(cfg) if a.name not in gone)

    def fair(name, cfg):
        return tuple(a for a in fair_actions(name, cfg) if a not in gone)

    for module in (compiled_model, session_search, step, session_spec):
        monkeypatch.setattr(module, "actions_for", reduced)
    monkeypatch.setattr(session_spec, "fair_actions", fair)
    step.moves.cache_clear()
    yield
    step.moves.cache_clear()


#: 2025-11-25 stdio at 2 ids (17 s: the compiled engines, unreduced and reduced) in the slow set
@pytest.mark.parametrize(
    "revision, transport, ids",
    [("2026-07-28", "http", 2), pytest.param("2025-11-25", "stdio", 2, marks=pytest.mark.slow)],
)
def test_the_deadlocks_and_the_first_ones_trace_are_the_session_engines(
    stuck, revision, transport, ids
):
    ref, mine = _records("atomic", revision, transport, ids)
    assert mine == ref
    assert mine["deadlocks"] > 0 and mine["deadlock_trace"]
    # reduced, the native and the compiled engine count and trace the same dead ends
    cfg = Config(DESIGNS["atomic"], revision, transport, ids, 2, client_for("reusing", revision))
    ran = [explore(spec(cfg), engine=e, symmetry=True) for e in ("native", "compiled")]
    assert ran[0].deadlocks == ran[1].deadlocks > 0
    assert ran[0].deadlock_trace == ran[1].deadlock_trace


def test_a_trace_the_session_rules_do_not_take_stops_the_reading():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 2, 2, client_for("reusing", "2026-07-28"))
    ex = explore(spec(cfg))
    ex.deadlock_trace = [{"action": "respond", "args": {"r": 0}}]  # nothing sent yet
    with pytest.raises(ValueError, match="not enabled"):
        run_result(cfg, ex, False)


# --- check's session runs ----------------------------------------------------------------------


def _untimed(run: dict) -> dict:
    return {k: v for k, v in run.items() if k != "seconds"}


def test_check_runs_the_session_on_the_one_explorer(capsys, monkeypatch, tmp_path):
    import json

    from mcp_inflight.cli import main
    from mcp_inflight.proofs.explorer import search_session

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "session", "--revision", "2025-11-25", "--transport", "stdio"]
    assert main([*argv, "--json", "--no-prove", "--no-sensitivity", "--no-progress"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    cfg = Config(
        DESIGNS["atomic"], "2025-11-25", "stdio", 2, 2, client_for("reusing", "2025-11-25")
    )
    mine = search_session(cfg, progress=False)
    assert _untimed(run) == _untimed(mine.to_json()) and run["symmetry"] is True
    # the one explorer's reduction is exact here, the session engines' key is not: fewer states,
    # the same verdicts
    own = explore(cfg, symmetry=True, progress=False, engine="compiled", liveness=True)
    assert mine.states < own.states
    assert [(v.name, v.ok) for v in mine.verdicts] == [(v.name, v.ok) for v in own.verdicts]


def test_without_liveness_the_run_keeps_no_liveness_property():
    from mcp_inflight.proofs.explorer import search_session

    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 2, client_for("reusing", "2026-07-28"))
    assert not [p for p in spec(cfg, liveness=False).props if p.kind == "liveness"]
    assert {p.name for p in spec(cfg).props if p.kind == "liveness"} == {
        "requests_answered",
        "settles",
        "no_deadlock",
    }
    res = search_session(cfg, progress=False, liveness=False)
    assert res.ok and not res.of("liveness") and res.of("invariant")


def test_a_checker_error_fails_the_record_and_a_cut_search_is_incomplete():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 2, client_for("reusing", "2026-07-28"))
    ex = explore(spec(cfg))
    assert run_result(cfg, ex, False).ok
    ex.errors.append("model bug: a slot out of its range")
    res = run_result(cfg, ex, False)
    assert res.errors == ["model bug: a slot out of its range"] and not res.ok
    assert res.to_json()["errors"] == res.errors
    from mcp_inflight.report import explore_text

    assert "ERRORS: model bug: a slot out of its range" in explore_text([res])
    cut = explore(spec(cfg), max_states=10)
    res = run_result(cfg, cut, False)
    assert res.errors == [] and not res.complete and not res.ok


def test_runs_spread_over_processes_are_the_runs_one_after_another():
    from mcp_inflight.proofs.explorer import search_session, search_sessions

    cfgs = [
        Config(DESIGNS[d], "2026-07-28", t, 2, 2, client_for("reusing", "2026-07-28"))
        for d, t in (("atomic", "http"), ("unguarded", "stdio"))
    ]
    spread = search_sessions(cfgs, jobs=2, progress=False, symmetry=[True, False])
    alone = [
        search_session(c, symmetry=y, progress=False)
        for c, y in zip(cfgs, (True, False), strict=True)
    ]
    assert [_untimed(r.to_json()) for r in spread] == [_untimed(r.to_json()) for r in alone]
    assert [r.symmetry for r in spread] == [True, False]


@pytest.mark.parametrize("engine", ["native", "compiled"])
def test_a_check_made_already_is_reduced_on_without_checking_again(monkeypatch, engine):
    """``check`` hands each run the verdict of the declared symmetry check it made (and
    cached): the run reduces on it, or runs unreduced where it failed, and checks nothing
    again."""
    import mcp_inflight.proofs.declared_symmetry as declared_symmetry
    import mcp_inflight.proofs.native_spec as native_spec
    from mcp_inflight.proofs.explorer import reduction

    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 2, 2, client_for("reusing", "2026-07-28"))
    told = reduction(spec(cfg), engine)
    assert told.startswith("reduced: ")
    checked = explore(spec(cfg), symmetry=True, engine=engine)

    def no_check(*args, **kwargs):
        raise AssertionError("checked again")

    monkeypatch.setattr(declared_symmetry, "check", no_check)
    monkeypatch.setattr(native_spec, "_reduction", no_check)
    trusted = explore(spec(cfg), symmetry=told, engine=engine)
    assert trusted.symmetry == told == checked.symmetry
    assert trusted.states == checked.states < explore(spec(cfg), engine=engine).states
    refused = explore(spec(cfg), symmetry="unreduced: a rule breaks it", engine=engine)
    assert refused.symmetry == "unreduced: a rule breaks it"
    assert refused.states == explore(spec(cfg), engine=engine).states
    with pytest.raises(TypeError, match="one explorer"):
        explore(cfg, symmetry=told, engine="compiled")
