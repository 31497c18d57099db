"""Fairness is declared per action (``Action.fair`` in ``model/session.py``), and each liveness
property lists the fair actions it rests on (``proofs/liveness.py:RESTS_ON``).

The liveness checker reads the declaration, not the side an action is labelled with: a client
action relabelled as a server move changes nothing, so the mutant whose bug only a client's
answer would hide (``atomic-waits-on-answer``) is still caught.  A property judged without one
of the fair actions it lists fails, and a property that lists an action the model does not
declare fair is refused.  ``check`` prints each liveness cell's list.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache

import pytest

from mcp_inflight.cli import main
from mcp_inflight.model import eventually as L
from mcp_inflight.model import session as S
from mcp_inflight.model import step
from mcp_inflight.model.config import DESIGNS, Config, liveness_mutants
from mcp_inflight.model.declare import FAIRNESS
from mcp_inflight.proofs.explorer import explore

WAITS = Config(liveness_mutants()["atomic-waits-on-answer"], "2025-11-25", "stdio", 2, 2)
ATOMIC = Config(DESIGNS["atomic"], "2026-07-28", "stdio", 2, 2)


@pytest.fixture
def fresh_tables():
    S.actions_for.cache_clear()
    step.moves.cache_clear()
    yield
    S.actions_for.cache_clear()
    step.moves.cache_clear()


def _patch(monkeypatch, name: str, **changes) -> None:
    act = S.ACTION[name]
    new = replace(act, **changes)
    monkeypatch.setattr(S, "ACTIONS", tuple(new if a is act else a for a in S.ACTIONS))
    monkeypatch.setitem(S.ACTION, name, new)
    S.actions_for.cache_clear()
    step.moves.cache_clear()


def _answered(cfg: Config):
    """The verdict of ``requests_answered`` on ``cfg`` as the model and the fairness lists stand,
    on the engine ``check`` runs (native where a C compiler is: it judges liveness under the
    fairness ``proofs/liveness.py`` reads from the declaration, ``tests/test_native_spec.py``)."""
    return explore(cfg, liveness=True, progress=False, engine="auto").verdict("requests_answered")


@cache
def _atomic_answered():
    """``_answered(ATOMIC)`` with the model and the fairness lists as written, judged once for
    the tests that start from it (they only read it)."""
    return _answered(ATOMIC)


def test_every_action_declares_its_fairness():
    assert all(a.fair in FAIRNESS for a in S.ACTIONS)
    act = S.ACTION["respond"]
    with pytest.raises(TypeError):  # no default: an action without a declaration is refused
        S.Action(
            act.name, act.side, act.params, act.trigger, act.extra, act.effect, act.applies, ""
        )  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="fairness must be one of"):
        replace(act, fair="strong")
    # what nothing forces: the senders' moves, a stream breaking, the session's end
    none = {a.name for a in S.ACTIONS if a.fair == "none"}
    assert none == {
        "client_sends",
        "rogue_sends",
        "answer",
        "send_cancel",
        "break_stream",
        "end_session",
    }


def test_each_liveness_property_lists_declared_fair_actions():
    assert set(L.RESTS_ON) == set(L.NAMES)
    assert L.RESTS_ON["settles"] == () and L.RESTS_ON["no_deadlock"] == ()
    for a in L.RESTS_ON["requests_answered"]:
        assert S.ACTION[a].fair == "weak", a
    listed = L.fair_actions("requests_answered", ATOMIC)
    assert "respond" in listed and "check" not in listed  # only the run's actions


def test_a_client_action_relabelled_as_a_server_move_changes_no_fairness(monkeypatch, fresh_tables):
    before = _answered(WAITS)
    assert not before.ok  # the handler waits for an answer the client never owes
    _patch(monkeypatch, "answer", side="server")
    after = _answered(WAITS)
    assert not after.ok, "the relabelled answer became fair and hid the mutant"
    assert after.fair == before.fair and "answer" not in after.fair


def test_declared_and_listed_fairness_of_the_answer_would_hide_that_mutant(
    monkeypatch, fresh_tables
):
    # why the declaration matters: assume the client's answer fair, and the bug is gone
    _patch(monkeypatch, "answer", fair="weak")
    monkeypatch.setitem(
        L.RESTS_ON, "requests_answered", L.RESTS_ON["requests_answered"] + ("answer",)
    )
    v = _answered(WAITS)
    assert v.ok and "answer" in v.fair


@pytest.mark.parametrize("dropped", ["arrive", "admit", "respond", "reject"])
def test_a_property_judged_without_a_listed_fairness_fails(monkeypatch, dropped):
    assert _atomic_answered().ok
    listed = L.RESTS_ON["requests_answered"]
    monkeypatch.setitem(L.RESTS_ON, "requests_answered", tuple(a for a in listed if a != dropped))
    v = _answered(ATOMIC)
    assert not v.ok and dropped not in v.fair
    assert v.trace is not None and v.loop_start is not None


def test_a_property_resting_on_undeclared_fairness_is_refused(monkeypatch, fresh_tables):
    _patch(monkeypatch, "respond", fair="none")
    with pytest.raises(ValueError, match="rests on the weak fairness of respond"):
        L.fair_actions("requests_answered", ATOMIC)
    monkeypatch.setitem(L.RESTS_ON, "settles", ("respnd",))
    with pytest.raises(ValueError, match="not an action"):
        L.fair_actions("settles", ATOMIC)


def test_check_prints_the_fairness_of_each_liveness_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    argv += ["--no-prove", "--no-sensitivity", "--no-progress"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    live = {c["property"]: c for c in doc["results"] if c["kind"] == "liveness"}
    assert set(live) == set(L.NAMES)
    assert live["requests_answered"]["fairness"] == list(
        L.fair_actions("requests_answered", ATOMIC)
    )
    assert live["settles"]["fairness"] == []
    run = doc["runs"][0]
    assert {v["name"]: v["fairness"] for v in run["liveness"]}["no_deadlock"] == []
    assert main(argv) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if "requests_answered" in ln)
    assert "fair: arrive, admit, refuse" in row and "respond" in row
    assert any("settles" in ln and "fair: none" in ln for ln in out.splitlines())


def test_check_prints_the_fairness_of_a_declared_models_liveness_cell(capsys):
    """The declared models' liveness cells say what they rest on, as the session's do."""
    argv = ["check", "--model", "lease", "--no-prove", "--no-sensitivity", "--no-progress"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    live = {c["property"]: c for c in doc["results"] if c["kind"] == "liveness"}
    assert live and all(c["fairness"] == ["expire"] for c in live.values()), live
    assert main(argv) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if "ids_free_after_lease" in ln)
    assert "(fair: expire)" in row
