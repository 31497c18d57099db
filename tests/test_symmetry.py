"""Symmetry checked, not trusted, on the session's declaration (``proofs/declared_symmetry.py``,
in C where the native engine runs it): the explorer's reduction and the bounded search's order
of ids rest on the model commuting with renaming ids and instances.  A rule or a property that
treats one id differently is found and named, and ``check`` then fails, explores without the
reduction and finds the counterexample the reduced search would have merged away."""

from __future__ import annotations

import json

import pytest

import mcp_inflight.model.session_spec as session_spec
from mcp_inflight.cli import main
from mcp_inflight.model import session as S
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.session_spec import spec
from mcp_inflight.proofs import declared_symmetry
from mcp_inflight.proofs.explorer import reduction
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


@pytest.mark.parametrize("engine", ["fastest", "compiled"])
def test_the_model_as_written_is_symmetric(engine):
    for cfg in (CFG, Config(DESIGNS["unguarded"], "2026-07-28", "http", 2, 2)):
        told = reduction(spec(cfg), engine)
        assert told.startswith("reduced: symmetric in id (2), inst (2), checked on every state")


@pytest.mark.parametrize("engine", ["fastest", "compiled"])
def test_a_rule_that_treats_one_id_differently_is_named(id_one_unguarded, engine):
    told = reduction(spec(CFG), engine)
    assert told.startswith("unreduced: not symmetric in id (2), inst (2): the guard of admit")
    assert "renaming id 0->1, 1->0" in told
    res = declared_symmetry.symmetry_of(spec(CFG))
    assert not res.ok and res.broken is not None and res.broken.rule == "the guard of admit"


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
    monkeypatch.setattr(session_spec, "PROPERTIES", (*P.PROPERTIES, odd))
    res = declared_symmetry.symmetry_of(spec(CFG))
    assert not res.ok and res.broken is not None
    assert "id_one_special" in res.broken.rule
    assert "id 0->1, 1->0" in res.broken.text()


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


def test_the_reference_paths_are_taken_when_asked(monkeypatch, tmp_path, capsys):
    """``MCP_INFLIGHT_REFERENCE=1``: ``check`` makes its symmetry check on the compiled rules,
    not in C, with the same verdict."""
    import mcp_inflight.proofs.native_spec as native_spec

    def refuse(*a, **k):
        raise AssertionError("the check in C ran")

    monkeypatch.setattr(native_spec, "reduction", refuse)
    monkeypatch.setenv("MCP_INFLIGHT_REFERENCE", "1")
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    assert main([*argv, "--no-prove", "--no-sensitivity", "--no-progress"]) == 0
    assert "Symmetry: the rules and properties commute with renaming" in capsys.readouterr().out
