"""``requests_answered`` proved for any number of requests by a ranking argument
(``proofs/ranking.py``), and each of its conditions shown failing where the argument breaks."""

from __future__ import annotations

import pytest

from mcp_inflight.model.config import ATOMIC, Config, liveness_mutants, profiles
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.proofs.ranking import HELPFUL, rank

MUT = liveness_mutants()
HTTP = [p for p in profiles() if p[1] == "http"]
STDIO = [p for p in profiles() if p[1] == "stdio"]


def _conds(v):
    return {(f.condition, f.case, f.action) for f in v.failures}


MODERN = [p for p in profiles() if p[0] == "2026-07-28"]


@pytest.mark.parametrize("rev,tr", MODERN)
def test_atomic_proved(rev, tr):
    v = rank(Config(ATOMIC, rev, tr))
    assert v.status == "proved", [str(f) for f in v.failures] + v.unknown
    assert v.to_json()["status"] == "proved"


def test_runs_after_respond_still_answers():
    # Its bug is a handler that never stops (settles, no_deadlock), not an unanswered request.
    assert rank(Config(MUT["atomic-runs-after-respond"], "2026-07-28", "http")).proved


@pytest.mark.parametrize("tr", ["stdio", "http"])
def test_2025_is_not_applicable_and_says_why(tr):
    # A handler withdraws each of its (any number of) waiters before it responds: no rank here.
    v = rank(Config(ATOMIC, "2025-11-25", tr))
    assert v.status == "n/a" and "waiters" in v.note and not v.proved


@pytest.mark.slow
@pytest.mark.parametrize("name", ["atomic-waits-on-answer", "atomic-waits-on-lost"])
def test_waiting_mutants_answer_on_2026(name):
    # No server-to-client request on 2026-07-28: nothing to wait on (as the explorer finds).
    assert rank(Config(MUT[name], "2026-07-28", "http")).proved


def test_admit_alone_is_not_helpful():
    # Admit and refuse apart: a duplicate admitted under r's id disables r's admit, rank equal
    # (stdio: one scope for every request; on 2026-07-28 http each POST has its own)
    v = rank(Config(ATOMIC, "2026-07-28", "stdio"), helpful={**HELPFUL, Life.RECEIVED: ("admit",)})
    conds = _conds(v)
    assert ("b", "received", None) in conds
    c = [f for f in v.failures if f.condition == "c" and f.case == "received"]
    # a duplicate's admit (or the session's end, which turns r away instead) disables it
    assert c and all(f.action.startswith(("admit(", "end_session(")) for f in c)
    f = next(f for f in c if f.action.startswith("admit("))
    moved = [k for k in f.changes if k.startswith("inflight[")]
    assert moved and f.post["instances"]


@pytest.mark.slow
def test_rank_that_rises_fails_a():
    v = rank(
        Config(ATOMIC, "2026-07-28", "http"),
        levels={Life.SENT: 0, Life.RECEIVED: 1, Life.IN_FLIGHT: 2},
    )
    conds = _conds(v)
    assert ("a", "sent", "arrive(A)") in conds
    assert any(c == "c" and k == "sent" for c, k, _ in conds)


def test_cli_ranking(capsys):
    from mcp_inflight.cli_prove import run

    assert run(["--ranking", "--revision", "2026-07-28", "--transport", "http"]) == 0
    assert "requests_answered  atomic 2026-07-28 http: proved" in capsys.readouterr().out


def test_split_claim_not_judged():
    from mcp_inflight.model.config import CHECK_THEN_CLAIM

    v = rank(Config(CHECK_THEN_CLAIM, "2026-07-28", "http"))
    assert v.status == "n/a" and not v.proved and v.note
