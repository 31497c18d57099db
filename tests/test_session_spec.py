"""The session model in the one declaration (``model/session_spec.py``), checked by the one
explorer (``proofs/explorer.py``) on its compiled rules: the same states, transitions, coverage,
verdicts (its three liveness properties included) and counterexamples as the rules as written
(the concrete engine, ``proofs/stepping.py``, the reference) read as the session's run record
(``proofs/session_run.py``), without symmetry reduction.

The default run takes the safe design on the four profiles and a mutant at small bounds (2025-11-25
at one id); the slow run takes every design and mutant of ``check --design all``, and three of
them with the fresh client.
"""

from __future__ import annotations

from functools import cache

import pytest

from mcp_inflight.model.config import Config, client_for, profiles
from mcp_inflight.model.declare import KINDS
from mcp_inflight.model.eventually import fair_actions
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_spec import spec
from mcp_inflight.model.session_state import FIELDS
from mcp_inflight.model.trace import id_name, inst_name
from mcp_inflight.proofs.explored import Explored
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.prove import all_designs, prove
from mcp_inflight.proofs.records import RunResult

PROFILES = profiles()


def _cfg(design: str, revision: str, transport: str, client: str = "reusing") -> Config:
    ids = 2 if revision == "2026-07-28" else 1  # 2025-11-25 at 2 x 2: the slow run
    return Config(all_designs()[design], revision, transport, ids, 2, client_for(client, revision))


def _words(res) -> dict[str, str]:
    """The session record's verdicts in the one explorer's words."""
    out = {}
    for v in res.verdicts:
        if not v.applies:
            continue
        if v.kind == "witness":
            out[v.name] = "reached" if v.ok else "not reached"
        else:
            out[v.name] = "holds" if v.ok else "fails"
    return out


def _named(step) -> tuple[str, dict[str, str]]:
    args = {"r": inst_name(step["args"]["r"])}
    if "i" in step["args"]:
        args["i"] = id_name(step["args"]["i"])
    return step["action"], args


@cache
def runs(cfg: Config) -> tuple[Explored, RunResult]:
    """The one explorer's run of ``cfg``'s declaration (compiled) and the session's record of
    its run on the rules as written (unreduced, liveness judged), once per test process:
    ``agree`` and ``_live_words`` compare the same two runs, and only read them."""
    one = explore(spec(cfg), engine="compiled")
    ref = explore(cfg, symmetry=False, progress=False, engine="interpreted", liveness=True)
    return one, ref


def agree(cfg: Config) -> Explored:
    """The one explorer's run of ``cfg``'s declaration, checked to find what the rules as
    written find; returned for a test's own assertions."""
    one, ref = runs(cfg)
    assert not one.errors, one.errors
    assert (one.states, one.transitions) == (ref.states, ref.transitions), cfg.label
    assert one.coverage == ref.coverage
    words = {k: v for k, v in one.verdicts.items() if not k.startswith("aux:")}
    assert words == _words(ref), cfg.label
    if cfg.design.name == "atomic":  # its proofs rest on every auxiliary invariant
        assert all(v == "holds" for k, v in one.verdicts.items() if k.startswith("aux:"))
    for v in ref.verdicts:  # the same shortest counterexamples and witness runs, step by step
        if v.trace is None or v.kind == "liveness":
            continue
        mine = one.traces[v.name]
        assert [_named(s) for s in mine] == [(s.action, s.args) for s in v.trace], v.name
        assert [s["story"] for s in mine] == [s.story for s in v.trace], v.name
    return one


def test_the_declaration_reads_every_field_action_and_property():
    cfg = _cfg("atomic", "2025-11-25", "stdio")
    sp = spec(cfg)
    assert [v.name for v in sp.vars] == [f.name for f in FIELDS]
    assert [a.name for a in sp.acts] == [a.name for a in actions_for(cfg)]
    applying = [p.name for p in PROPERTIES if p.applies(cfg)]
    assert [p.name for p in sp.props] == [*applying, "requests_answered", "settles", "no_deadlock"]
    live = sp.prop("requests_answered")
    assert live.kind == "liveness" and set(live.fair) == set(fair_actions("requests_answered", cfg))
    shapes = {p.name: (p.shape, p.fair) for p in sp.props if p.kind == "liveness"}
    assert shapes["settles"] == ("reachable", ()) and shapes["no_deadlock"] == ("unstuck", ())
    assert {p.kind for p in sp.props} <= set(KINDS)
    assert {v.role for v in sp.vars} == {"server", "wire", "ghost"}
    assert sp.canon is not None and spec(_cfg("atomic", "2026-07-28", "http")).canon is None


@pytest.mark.parametrize(
    "design, revision, transport",
    [("atomic", r, t) for r, t in PROFILES] + [("unguarded", "2026-07-28", t) for t in ("http",)],
)
def test_the_compiled_rules_agree_with_the_rules_as_written(design, revision, transport):
    agree(_cfg(design, revision, transport))


def test_a_mutant_fails_in_both_with_the_same_trace():
    one = agree(_cfg("unguarded", "2026-07-28", "stdio"))
    assert one.verdicts["unique_in_flight"] == "fails"
    assert not one.ok


#: the cases the default run compares (the two tests above), left out of the slow run's
#: parametrisation below: between them the two runs take every design and mutant once
DEFAULT_CASES = {("atomic", r, t) for r, t in PROFILES} | {
    ("unguarded", "2026-07-28", t) for t in ("http", "stdio")
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "design, revision, transport",
    [
        (d, r, t)
        for d in sorted(all_designs())
        for r, t in PROFILES
        if (d, r, t) not in DEFAULT_CASES
    ],
)
def test_every_design_and_mutant_agrees(design, revision, transport):
    """Every design and mutant of ``check --design all`` on every profile, but for the cases
    of ``DEFAULT_CASES``, compared by the same ``agree`` at the same bounds in the default run."""
    agree(_cfg(design, revision, transport))


@pytest.mark.slow
@pytest.mark.parametrize("revision, transport", PROFILES)
@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
def test_the_fresh_client_agrees_too(design, revision, transport):
    agree(_cfg(design, revision, transport, "fresh"))


@pytest.mark.parametrize(
    "revision, transport",
    [("2026-07-28", "http"), ("2026-07-28", "stdio")]
    + [pytest.param("2025-11-25", t, marks=pytest.mark.slow) for t in ("http", "stdio")],
)
def test_the_one_prover_proves_the_session_for_any_size(revision, transport):
    """The one prover (``proofs/induction.py``) on the declaration: every invariant of
    ``atomic`` is proved for any number of ids and instances (``proved``, not ``proved at
    bounds``), every auxiliary invariant kept."""
    client = client_for("reusing", revision)
    sp = spec(Config(all_designs()["atomic"], revision, transport, 2, 2, client))
    res = prove(sp)
    assert res.ok, {k: v for k, v in res.verdicts.items() if v != "proved"}
    assert res.unbounded and set(sp.unbounded) == {"inst", "id"}
    assert {p.name for p in sp.props if p.kind in ("always", "step")} <= set(res.verdicts)
    assert {res.word(k) for k in res.verdicts} == {"proved"}
    assert res.kept == [p.name for p in sp.aux] and not res.dropped


def test_the_one_prover_does_not_prove_a_broken_invariant_of_the_session():
    """On ``unguarded`` every invariant the explorer finds broken is left unproved (explored on
    the engine ``check`` runs: native where a C compiler is)."""
    sp = spec(_cfg("unguarded", "2026-07-28", "http"))
    run = explore(sp, engine="fastest")
    broken = [k for k, v in run.verdicts.items() if v == "fails" and ":" not in k]
    assert "no_misrouted_response" in broken
    res = prove(sp)
    assert not res.ok
    assert all(res.verdicts[k] != "proved" for k in broken), res.verdicts


def _live_words(cfg: Config) -> tuple[dict[str, str], dict[str, str]]:
    """The liveness verdicts on ``cfg``: the one explorer's on the declaration's compiled rules,
    and the record's of the rules as written."""
    one, ref = runs(cfg)
    mine = {v.name: one.verdicts[v.name] for v in ref.verdicts if v.kind == "liveness"}
    theirs = {v.name: "holds" if v.ok else "fails" for v in ref.verdicts if v.kind == "liveness"}
    return mine, theirs


def _live_cfg(design: str, revision: str, transport: str, ids: int) -> Config:
    from mcp_inflight.model.config import DESIGNS, liveness_mutants

    d = {**DESIGNS, **liveness_mutants()}[design]
    return Config(d, revision, transport, ids, 2, client_for("reusing", revision))


@pytest.mark.parametrize(
    "design, broken",
    [
        ("atomic", set()),
        ("atomic-waits-on-answer", {"requests_answered"}),
        ("atomic-runs-after-respond", {"settles", "no_deadlock"}),
    ],
)
def test_liveness_is_judged_alike_and_the_liveness_mutants_break_it_in_both(design, broken):
    """``requests_answered`` (an eventuality under weak fairness), ``settles`` and
    ``no_deadlock`` (properties of the graph itself): the verdicts on the compiled rules are
    those on the rules as written, and each is broken by the mutant that breaks it."""
    one, ref = _live_words(_live_cfg(design, "2025-11-25", "stdio", 1))
    assert set(one) == {"requests_answered", "settles", "no_deadlock"}
    assert one == ref
    assert {k for k, v in one.items() if v == "fails"} == broken


@pytest.mark.slow
@pytest.mark.parametrize("revision, transport", PROFILES)
@pytest.mark.parametrize(
    "design",
    ["atomic", "atomic-waits-on-answer", "atomic-waits-on-lost", "atomic-runs-after-respond"],
)
def test_liveness_agrees_on_every_liveness_mutant(design, revision, transport):
    for ids in (1, 2) if revision == "2026-07-28" else (1,):
        one, ref = _live_words(_live_cfg(design, revision, transport, ids))
        assert one == ref, (design, revision, transport, ids)


def test_the_declared_ranks_renumber_as_the_session_clock_does():
    """``ranks`` (``model/declare.py:Ranks``, generated per spec) against the session's own
    ``canonical_clock`` on random states of every value in range, stdio at 2 x 3."""
    import random

    from mcp_inflight.model.session_state import canonical_clock

    cfg = Config(all_designs()["atomic"], "2025-11-25", "stdio", 2, 3)
    sp = spec(cfg)
    rng = random.Random(7)
    for _ in range(2000):
        s = sp.state_type(
            *[
                rng.randint(v.lo, v.hi)
                if v.keys is None
                else tuple(rng.randint(v.lo, v.hi) for _ in range(v.keys))
                for v in sp.vars
            ]
        )
        assert sp.canon(s) == canonical_clock(cfg, s), s
