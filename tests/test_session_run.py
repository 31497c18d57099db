"""The one explorer's run of the session declaration, read as the session's run record
(``proofs/session_run.py``): the record of the rules as written (the concrete engine, the
reference) and that of the engine ``check`` runs (native where a C compiler is, else compiled)
are equal field for field in their JSON: states, transitions, coverage, every verdict with its
trace (rebuilt through the session's own step and told by the session's trace text), the
liveness lassos and where their loops start, and the deadlocks with the trace to the first: the
declaration's ``final`` states are the session's settled ones, so a state with no move is a
deadlock only where it is not settled (the designs here have none; with ``respond``, ``emit``
and the session's end taken out they have many, and the count and the first one's trace are
compared there too, reduced as well).  Only the time and the engine's name are apart; the
state counts ``check`` reports are pinned.
"""

from __future__ import annotations

import pytest

import mcp_inflight.model.session_spec as session_spec
from mcp_inflight.model import step
from mcp_inflight.model.config import Config, client_for, liveness_mutants
from mcp_inflight.model.eventually import fair_actions
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_spec import spec
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.session_run import run_result

DESIGNS = {**all_designs(), **liveness_mutants()}
#: not compared: the time, and which engine ran
APART = ("seconds", "engine")


def _records(
    design: str, revision: str, transport: str, ids: int, symmetry: bool = False
) -> tuple[dict, dict]:
    """The records of ``design``'s run on the rules as written and on ``check``'s engine."""
    cfg = Config(DESIGNS[design], revision, transport, ids, 2, client_for("reusing", revision))
    ref, mine = (
        explore(cfg, symmetry=symmetry, progress=False, engine=e, liveness=True)
        for e in ("interpreted", "auto")
    )
    a, b = ref.to_json(), mine.to_json()
    for k in APART:
        a.pop(k, None), b.pop(k, None)
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
def test_the_record_is_that_of_the_rules_as_written(design, revision, transport, ids):
    ref, mine = _records(design, revision, transport, ids)
    assert mine == ref
    failed = [v for kind in ("invariants", "liveness") for v in mine[kind] if not v.get("holds")]
    assert failed or design == "atomic"  # the mutants' failures are among what is compared


@pytest.fixture
def stuck(monkeypatch):
    """The session without ``respond``, ``emit`` and the session's end (as
    ``tests/test_explore.py`` takes them out), in its step and its declaration: an
    admitted request whose cancel was spent before its admission has nothing left to do, yet it
    is unfinished -- a deadlock."""
    gone = ("respond", "emit", "end_session")

    def reduced(cfg):
        return tuple(a for a in actions_for(cfg) if a.name not in gone)

    def fair(name, cfg):
        return tuple(a for a in fair_actions(name, cfg) if a not in gone)

    for module in (step, session_spec):
        monkeypatch.setattr(module, "actions_for", reduced)
    monkeypatch.setattr(session_spec, "fair_actions", fair)
    step.moves.cache_clear()
    yield
    step.moves.cache_clear()


#: 2025-11-25 stdio at 2 ids (the rules as written, unreduced and reduced) in the slow set
@pytest.mark.parametrize(
    "revision, transport, ids",
    [("2026-07-28", "http", 2), pytest.param("2025-11-25", "stdio", 2, marks=pytest.mark.slow)],
)
def test_the_deadlocks_and_the_first_ones_trace_are_those_of_the_rules_as_written(
    stuck, revision, transport, ids
):
    ref, mine = _records("atomic", revision, transport, ids)
    assert mine == ref
    assert mine["deadlocks"] > 0 and mine["deadlock_trace"]
    # reduced too, every engine counts and traces the same dead ends
    ref, mine = _records("atomic", revision, transport, ids, symmetry=True)
    assert mine == ref and mine["symmetry"] is True
    assert mine["deadlocks"] > 0 and mine["deadlock_trace"]


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
    # one state per orbit: fewer states than unreduced, the same verdicts
    whole = explore(cfg, symmetry=False, progress=False, liveness=True)
    assert mine.states < whole.states
    assert [(v.name, v.ok) for v in mine.verdicts] == [(v.name, v.ok) for v in whole.verdicts]


#: the states ``check`` reports on its default bound (2 ids x 2 requests, the reusing client,
#: one state per orbit); a change here is a change of the model or of the reduction, to be said
COUNTS = {
    ("atomic", "2026-07-28", "stdio"): 3_026,
    ("atomic", "2026-07-28", "http"): 2_311,
    ("atomic", "2025-11-25", "stdio"): 32_730,
    ("atomic", "2025-11-25", "http"): 79_514,
}


@pytest.mark.parametrize("design, revision, transport", sorted(COUNTS))
def test_the_state_counts_check_reports(design, revision, transport):
    cfg = Config(DESIGNS[design], revision, transport, 2, 2, client_for("reusing", revision))
    res = explore(cfg, progress=False, liveness=True)
    assert res.symmetry and res.complete and res.ok
    assert res.states == COUNTS[design, revision, transport]


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


def test_a_session_run_stops_at_no_number_of_states_unless_told(monkeypatch):
    """``explore(cfg)`` without ``max_states`` searches to the end (a declared model's own
    default, two million states, is not the session's: at 3 x 2 over http it has 2.9 million
    unreduced); with it, the run stops there and says it is incomplete."""
    from mcp_inflight.proofs import explorer

    asked = []
    real = explorer.explore

    def spy(model, max_states=None, **kw):
        asked.append(max_states)
        return real(model, max_states, **kw)

    monkeypatch.setattr(explorer, "explore", spy)
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 2, client_for("reusing", "2026-07-28"))
    assert explorer.search_session(cfg, progress=False).complete
    assert asked == [explorer.NO_LIMIT] and explorer.NO_LIMIT > 2_000_000
    cut = explorer.search_session(cfg, progress=False, max_states=10)
    assert asked[-1] == 10 and not cut.complete
