"""Symmetry checked, not trusted (``proofs/symmetry.py``): the explorer's reduction and the
bounded search's order of ids rest on the model commuting with renaming ids and instances.
A rule that treats one id differently is found and named, and ``check`` then fails, explores
without the reduction and finds the counterexample the reduced search would have merged away."""

from __future__ import annotations

import json

import pytest

from mcp_inflight.cli import main
from mcp_inflight.model import session as S
from mcp_inflight.model import step
from mcp_inflight.model.config import DESIGNS, Config, liveness_mutants, mutants
from mcp_inflight.model.logic import NONE
from mcp_inflight.proofs import symmetry
from mcp_inflight.proofs.session_run import SYMMETRY

CFG = Config(DESIGNS["atomic"], "2026-07-28", "stdio", 2, 2)


@pytest.fixture
def id_one_unguarded(monkeypatch, fresh_tables):
    """A claim that guards every id but 1 (a rule not symmetric in ids)."""
    monkeypatch.setitem(
        S.CONDITIONS,
        "claim_ok",
        lambda b, s, c, r, i: b.Or(s.inflight[s.rid[r]] == NONE, s.rid[r] == 1),
    )


def test_the_model_as_written_is_symmetric():
    for cfg in (CFG, Config(DESIGNS["unguarded"], "2025-11-25", "stdio", 2, 2)):
        res = symmetry.check(cfg, limit=1500)
        assert res.ok, res.broken and res.broken.text()
        assert res.states == 1500 and not res.complete


def test_a_whole_space_is_checked_when_it_fits():
    res = symmetry.check(Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 2), limit=20_000)
    assert res.ok and res.complete


def test_a_rule_that_treats_one_id_differently_is_named(id_one_unguarded):
    res = symmetry.check(CFG, limit=1500)
    assert not res.ok
    assert res.broken is not None
    assert res.broken.rule == "the guard of admit"
    assert "ids 0->1, 1->0" in res.broken.text()


@pytest.mark.parametrize("scope", ["state", "step"])
def test_a_property_that_treats_one_id_differently_is_named(scope, monkeypatch):
    from dataclasses import replace

    from mcp_inflight.model import properties as P

    # an invariant (or a step property) that holds everywhere but tells id 1 apart: it reads
    # "true" on a state where id 1 is in flight and "false" where only id 0 is
    if scope == "state":
        fn = lambda b, s, c: b.Or(s.inflight[1] != NONE, s.inflight[0] == NONE)  # noqa: E731
    else:
        fn = lambda b, pre, post, c, a, r, i, out: b.Or(  # noqa: E731
            post.inflight[1] != NONE, post.inflight[0] == NONE
        )
    odd = replace(P.PROPERTIES[0], name="id_one_special", scope=scope, fn=fn)
    monkeypatch.setattr(symmetry, "PROPERTIES", (*P.PROPERTIES, odd))
    res = symmetry.check(CFG, limit=1500)
    assert not res.ok and res.broken is not None
    assert res.broken.rule == "property id_one_special"
    assert "ids 0->1, 1->0" in res.broken.text()


def test_renaming_is_a_bijection_on_states():
    b = step.backend(CFG)
    s = step.start(CFG)
    for m in step.moves(CFG)[:6]:
        t = step.take(CFG, s, m, b)
        if t is not None:
            s = t.post
    for pi in symmetry.generators(CFG):
        twice = symmetry.rename_state(CFG, symmetry.rename_state(CFG, s, pi), pi)
        assert twice == s  # the generators here are swaps of two


def test_check_refuses_the_reduction_and_fails(id_one_unguarded, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    argv += ["--no-prove", "--no-sensitivity", "--no-progress", "--json"]
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    bad = [c for c in doc["results"] if not c["passed"]]
    sym = [c for c in bad if c["property"] == SYMMETRY]
    assert sym and "the guard of admit is not symmetric" in sym[0]["message"]
    assert doc["runs"][0]["symmetry"] is False  # explored unreduced
    # unreduced, the explorer finds what the rule breaks: duplicates under id 1
    assert any(c["property"] == "unique_in_flight" for c in bad)


def test_check_as_written_passes_its_symmetry_section(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    argv += ["--no-prove", "--no-sensitivity", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Symmetry: the rules and properties commute with renaming" in out


# --- the check on flat states (proofs/symmetry_flat.py) against the reference --------------


def _configs(designs):
    from mcp_inflight.model.config import client_for, profiles

    return [
        Config(d, rev, tr, 2, 2, client_for("reusing", rev))
        for d in designs
        for rev, tr in profiles("all", "all")
    ]


@pytest.mark.parametrize("cfg", _configs(DESIGNS.values()), ids=lambda c: c.label)
def test_the_flat_check_agrees_with_the_reference_on_every_design_and_profile(cfg):
    flat = symmetry.check(cfg, limit=200, engine="flat")
    assert flat == symmetry.check_interpreted(cfg, limit=200)
    assert flat.ok and flat.states == 200


#: the states of a mutant compared with the reference where its knob acts on them (a mutant
#: turns one knob of atomic; where its rules give what atomic's give on every one of these
#: states, it is compared at check's own bound, as the safe designs are)
MUTANT_LIMIT = 1_000


def _acts_within(cfg, limit):
    """Whether, among the first ``limit`` states the comparison visits, some state has a move
    whose outputs or successor differ from atomic's on the same profile."""
    from dataclasses import replace

    from mcp_inflight.model.config import ATOMIC
    from mcp_inflight.proofs.symmetry import _states

    base = replace(cfg, design=ATOMIC)
    b, b0 = step.backend(cfg), step.backend(base)

    def steps(c, s, bk):
        return [(t.move.action.name, t.move.args, t.post, t.out) for t in step.successors(c, s, bk)]

    return any(steps(cfg, s, b) != steps(base, s, b0) for s in _states(cfg, limit, [False]))


@pytest.mark.slow
@pytest.mark.parametrize(
    "cfg",
    _configs([*DESIGNS.values(), *mutants().values(), *liveness_mutants().values()]),
    ids=lambda c: c.label,
)
def test_the_flat_check_agrees_with_the_reference_at_checks_bound(cfg):
    limit = symmetry.CHECK_LIMIT
    if cfg.design.name not in DESIGNS and _acts_within(cfg, MUTANT_LIMIT):
        limit = MUTANT_LIMIT
    flat = symmetry.check(cfg, limit=limit, engine="flat")
    assert flat == symmetry.check_interpreted(cfg, limit=limit)


def test_a_mutant_acting_apart_from_atomic_is_seen_within_its_states():
    """The test above takes the short comparison only where the knob acts: a mutant that acts
    within those states is seen, atomic itself never."""
    from mcp_inflight.model.config import ATOMIC

    (cfg,) = _configs([mutants()["atomic-no-refusal"]])[:1]
    assert _acts_within(cfg, MUTANT_LIMIT)
    assert not _acts_within(_configs([ATOMIC])[0], MUTANT_LIMIT)


def test_the_flat_check_covers_a_whole_space_as_the_reference_does():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 2)
    flat = symmetry.check(cfg, limit=20_000, engine="flat")
    assert flat.ok and flat.complete
    assert flat == symmetry.check_interpreted(cfg, limit=20_000)


def test_the_flat_check_catches_a_rule_that_treats_one_id_differently(id_one_unguarded):
    flat = symmetry.check(CFG, limit=1500, engine="flat")
    assert not flat.ok and flat.broken is not None
    assert flat.broken.rule == "the guard of admit"
    assert "ids 0->1, 1->0" in flat.broken.text()
    # the same state, move and text as the reference
    assert flat == symmetry.check_interpreted(CFG, limit=1500)


def test_the_flat_check_catches_an_effect_that_treats_one_instance_differently(
    monkeypatch, fresh_tables
):
    from dataclasses import replace

    from mcp_inflight.model.logic import Write

    # admitting instance 0 also marks its response received: an effect only instance 0 has
    admit = S.ACTION["admit"]

    def odd(b, s, c, r, i, out):
        ws = list(admit.effect(b, s, c, r, i, out))
        return [*ws, Write("got_resp", r, True)] if r == 0 else ws

    patched = tuple(replace(a, effect=odd) if a is admit else a for a in S.ACTIONS)
    monkeypatch.setattr(S, "ACTIONS", patched)
    flat = symmetry.check(CFG, limit=1500, engine="flat")
    assert not flat.ok and flat.broken is not None
    assert flat.broken.rule == "the effect of admit"
    assert "instances 0->1, 1->0" in flat.broken.text()
    assert flat == symmetry.check_interpreted(CFG, limit=1500)


def test_the_reference_paths_are_taken_when_asked(monkeypatch, id_one_unguarded):
    import mcp_inflight.proofs.symmetry_flat as flat_mod

    def refuse(*a, **k):
        raise AssertionError("the flat check ran")

    monkeypatch.setattr(flat_mod, "check", refuse)
    monkeypatch.setenv("MCP_INFLIGHT_REFERENCE", "1")
    res = symmetry.check(CFG, limit=1500)
    assert not res.ok and res.broken is not None and res.broken.rule == "the guard of admit"
