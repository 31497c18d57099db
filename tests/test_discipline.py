"""The ghost and obligation discipline ``check`` judges on every run: a server rule that reads a
ghost, or a server check labelled as the sender's obligation, fails the run with its name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcp_inflight.model import lease as L
from mcp_inflight.model import lease_actions, lease_state, resume, step
from mcp_inflight.model import session as S
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.proofs import discipline

CFG = Config(DESIGNS["atomic"], "2025-11-25", "http", 2, 2)


def test_the_models_as_written_keep_the_discipline():
    for design in DESIGNS.values():
        assert discipline.session(replace(CFG, design=design)).passed
    assert discipline.small(L.spec_of(lease_state.Config())).passed
    assert discipline.small(resume.spec()).passed


def test_a_server_guard_that_reads_a_ghost_fails(monkeypatch, fresh_tables):
    claim_ok = S.CONDITIONS["claim_ok"]
    monkeypatch.setitem(
        S.CONDITIONS,
        "claim_ok",
        lambda b, s, c, r, i: b.And(claim_ok(b, s, c, r, i), b.Not(s.rogue[r])),
    )
    cell = discipline.session(CFG)
    assert not cell.passed
    assert "admit's guard reads the ghost field rogue" in cell.message


def test_a_server_check_labelled_as_an_obligation_fails(monkeypatch, fresh_tables):
    admit = S.ACTION["admit"]
    bad = replace(admit, obligations=("claim_ok",))
    monkeypatch.setattr(S, "ACTIONS", tuple(bad if a is admit else a for a in S.ACTIONS))
    S.actions_for.cache_clear()
    step.moves.cache_clear()
    cell = discipline.session(CFG)
    assert not cell.passed
    assert "obligation claim_ok reads only server state" in cell.message


def test_a_lease_script_that_reads_a_ghost_fails(monkeypatch):
    real = lease_actions.actions  # patched where spec_of reads it: lease.py's import

    def bad(b, s, r=None, w=None, i=None):
        return b.And(s.wstate[s.wk[r]] == lease_state.Proc.ALIVE, s.told[r] == 0)

    monkeypatch.setattr(
        L,
        "actions",
        lambda cfg: tuple(replace(a, guard=bad) if a.name == "release" else a for a in real(cfg)),
    )
    cell = discipline.small(L.spec_of(lease_state.Config()))
    assert not cell.passed and "release's guard reads the ghost field told" in cell.message


def test_a_server_effect_that_copies_a_ghost_into_real_state_fails():
    from mcp_inflight.model.logic import Write

    spec = resume.spec()
    emit = next(a for a in spec.acts if a.name == "emit")

    def leaky(b, s, **kw):
        # the handler's emit records in the real field ``last`` whether its stream was resumed
        # (the ghost ``resumed``): a server that cannot see it could not do this
        return emit.effect(b, s, **kw) + [Write("last", kw["q"], s.resumed[kw["q"]])]

    patched = replace(
        spec, acts=tuple(replace(a, effect=leaky) if a is emit else a for a in spec.acts)
    )
    cell = discipline.small(patched)
    assert not cell.passed and "emit's effect writes real fields from ghost fields" in cell.message


# --- Python's operators on symbolic values ------------------------------------------------------


def test_python_and_on_a_symbolic_value_is_a_model_error_naming_the_rule(monkeypatch, capsys):
    """z3 would read ``x == y and z`` as a syntactic comparison of x and y: a conjunct silently
    dropped from every proof.  The provers refuse it, naming the rule and its line."""
    from mcp_inflight.cli import main
    from mcp_inflight.model.logic import NONE

    claim_ok = S.CONDITIONS["claim_ok"]

    def sloppy_claim(b, s, c, r, i):
        return s.inflight[s.rid[r]] == NONE and claim_ok(b, s, c, r, i)

    monkeypatch.setitem(S.CONDITIONS, "claim_ok", sloppy_claim)
    # the prover in this process, after the explorer, so that it reads this test's patch (its
    # fast path proves in fresh processes, which read the model as written)
    monkeypatch.setenv("MCP_INFLIGHT_REFERENCE", "1")
    args = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    rc = main(
        [*args, "--no-explore", "--no-symmetry", "--no-cache", "--no-sensitivity", "--no-progress"]
    )
    out = capsys.readouterr()
    assert rc == 1
    assert "model error in sloppy_claim (tests/test_discipline.py:" in out.err
    assert "b.And, b.Or, b.Not" in out.err and "Traceback" not in out.err


def test_the_small_and_lease_provers_refuse_it_too(monkeypatch):
    from mcp_inflight.model.declare import Act, Spec, Var, always
    from mcp_inflight.model.logic import ModelError
    from mcp_inflight.proofs.declared import prove

    def g(b, s):
        return s.x < 1 or s.x < 2

    def small_x(b, s):
        """x stays small."""
        return s.x <= 2

    spec = Spec(
        "t",
        "one",
        {},
        (Var("x", 0, 2, 0),),
        (Act("inc", (), g, lambda b, s: [], lambda a: "inc"),),
        (always(small_x),),
        {},
    )
    with pytest.raises(ModelError, match=r"model error in g \(tests/test_discipline.py:"):
        prove(spec)
    real = lease_actions.actions  # patched where spec_of reads it: lease.py's import
    bad = lambda b, s, r=None, w=None, i=None: not s.wstate[s.wk[r]] == 0  # noqa: E731
    monkeypatch.setattr(
        L,
        "actions",
        lambda cfg: tuple(replace(a, guard=bad) if a.name == "renew" else a for a in real(cfg)),
    )
    with pytest.raises(ModelError, match="model error in <lambda>"):
        prove(L.spec())
