"""Witnesses name their path: a witness is reached only on a step of the actions it names
(``Property.through``) that makes it true, so another path cannot stand in for it.

With ``refuse`` dead (its guard made unsatisfiable), some state still has a refused request
(``reject`` turns requests away at the session's end), yet ``duplicate_refused`` is not reached
and ``check`` fails naming the path; with ``deliver_cancel`` dead, the session's end still
cancels requests, yet ``cancelled`` is not reached.  Every engine agrees, and the model as
written reaches every witness through its path with the same state counts.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from mcp_inflight.cli import main
from mcp_inflight.model import session as S
from mcp_inflight.model import step
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.properties import PROPERTIES, PROPERTY, WITNESSES
from mcp_inflight.model.property_kinds import judged
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.native_build import available
from support.explored import judging, run

CFG = Config(DESIGNS["atomic"], "2026-07-28", "stdio", 2, 2)
#: the rules as written (interpreted: the concrete engine, its symmetry check included, some
#: 20 s a run) in the slow set
ENGINES = [
    "compiled",
    pytest.param("interpreted", marks=pytest.mark.slow),
    *(["native"] if available() else []),
]
#: ``check --engine``'s names as the one explorer's
ENGINE_OF = {"compiled": "compiled", "interpreted": "concrete", "native": "native"}


@pytest.fixture
def fresh_tables():
    S.actions_for.cache_clear()
    step.moves.cache_clear()
    yield
    S.actions_for.cache_clear()
    step.moves.cache_clear()


def _kill(monkeypatch, name: str) -> None:
    """Make action ``name`` dead: its guard gains a condition that never holds."""
    monkeypatch.setitem(S.CONDITIONS, "never", lambda b, s, c, r, i: False)
    act = S.ACTION[name]
    dead = replace(act, extra=act.extra + ("never",))
    monkeypatch.setattr(S, "ACTIONS", tuple(dead if a is act else a for a in S.ACTIONS))
    monkeypatch.setitem(S.ACTION, name, dead)
    S.actions_for.cache_clear()
    step.moves.cache_clear()


def _without_path(cfg, name: str, engine: str = "fastest"):
    """The one explorer's run of ``cfg`` with the witness ``name`` judged as before paths:
    reached on any state where it holds (on every design and profile, as it applied then);
    ``(run, its verdict word, the last action of its trace or None)``."""
    plain = judging(
        cfg, [replace(PROPERTY[name], through=(), applies=lambda c: True)], engine=engine
    )
    steps = plain.traces.get(name)
    return plain, plain.verdicts[name], steps[-1]["action"] if steps else None


def test_every_witness_names_a_path_of_actions_of_the_model():
    assert WITNESSES
    for p in WITNESSES:
        assert p.through and all(a in S.ACTION for a in p.through), p.name
    assert PROPERTY["duplicate_refused"].through == ("refuse",)
    assert PROPERTY["cancelled"].through == ("deliver_cancel",)


def test_a_witness_without_a_path_is_refused():
    from mcp_inflight.model.property_kinds import witness

    def somewhere(b, s, c):
        """Anything."""
        return True

    with pytest.raises(ValueError, match="must name the actions of its path"):
        witness(somewhere, ())
    with pytest.raises(ValueError, match="no action refusee"):
        witness(somewhere, ("refusee",))


def test_judged_turns_a_path_witness_into_a_step_witness():
    j = {p.name: p for p in judged(PROPERTIES)}
    assert j["duplicate_refused"].scope == "step" and j["duplicate_refused"].kind == "witness"
    assert PROPERTY["duplicate_refused"].scope == "state"  # the model's text is unchanged
    assert j["unique_in_flight"] is PROPERTY["unique_in_flight"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_model_as_written_reaches_every_witness_through_its_path(engine):
    r = explore(CFG, engine=engine, progress=False)
    plain, _, _ = _without_path(CFG, "cancelled", ENGINE_OF[engine])
    assert (r.states, r.transitions) == (plain.states, plain.transitions)
    for v in r.of("witness"):
        if v.applies:
            assert v.ok, v.name
            assert v.through == PROPERTY[v.name].through
            # the trace ends with a step of the path
            assert v.trace and v.trace[-1].action in v.through, v.name


@pytest.mark.parametrize("engine", ENGINES)
def test_refuse_dead_leaves_duplicate_refused_unreached(monkeypatch, fresh_tables, engine):
    _kill(monkeypatch, "refuse")
    r = explore(CFG, engine=engine, progress=False)
    assert r.coverage["refuse"] == 0 and r.coverage["reject"] > 0
    v = r.verdict("duplicate_refused")
    assert v.applies and not v.ok and v.through == ("refuse",)
    assert not r.ok
    # another path reaches the state: a request turned away at the session's end
    assert _without_path(CFG, "duplicate_refused", ENGINE_OF[engine])[1:] == ("reached", "reject")


@pytest.mark.parametrize("engine", ENGINES)
def test_cancel_dead_leaves_cancelled_unreached(monkeypatch, fresh_tables, engine):
    _kill(monkeypatch, "deliver_cancel")
    r = explore(CFG, engine=engine, progress=False)
    assert r.coverage["deliver_cancel"] == 0 and r.coverage["end_request"] > 0
    v = r.verdict("cancelled")
    assert v.applies and not v.ok and v.through == ("deliver_cancel",)
    assert _without_path(CFG, "cancelled", ENGINE_OF[engine])[1:] == ("reached", "end_request")


def _check(tmp_path, monkeypatch, *extra):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path / "cache"))
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    argv += ["--no-prove", "--no-sensitivity", "--no-progress", *extra]
    return main(argv)


def test_check_fails_naming_the_path_in_text_json_and_junit(
    monkeypatch, fresh_tables, tmp_path, capsys
):
    _kill(monkeypatch, "refuse")
    junit = tmp_path / "check.xml"
    assert _check(tmp_path, monkeypatch, "--json", "--junit-xml", str(junit)) == 1
    doc = json.loads(capsys.readouterr().out)
    cell = next(c for c in doc["results"] if c["property"] == "duplicate_refused")
    assert cell["verdict"] == "not reached" and not cell["passed"]
    assert cell["through"] == ["refuse"]
    assert "duplicate_refused not reached through refuse" in cell["message"]
    run = doc["runs"][0]
    w = next(x for x in run["witnesses"] if x["name"] == "duplicate_refused")
    assert w["through"] == ["refuse"] and w["reached"] is False
    case = next(
        c for c in ET.parse(junit).getroot() if c.get("name") == "witness:duplicate_refused"
    )
    fail = case.find("failure")
    assert fail is not None and "through refuse" in fail.get("message", "")
    prop = case.find("properties/property")
    assert prop is not None and (prop.get("name"), prop.get("value")) == ("through", "refuse")
    assert _check(tmp_path, monkeypatch) == 1
    out = capsys.readouterr().out
    assert "witness unreachable: duplicate_refused through refuse" in out
    assert "FAILED" in out


def test_check_as_written_reaches_every_witness_through_its_path(tmp_path, monkeypatch, capsys):
    assert _check(tmp_path, monkeypatch, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    cells = [c for c in doc["results"] if c["kind"] == "witness" and c["verdict"] == "reached"]
    assert {c["property"] for c in cells} >= {"duplicate_refused", "cancelled"}
    assert all(c["through"] == list(PROPERTY[c["property"]].through) for c in cells)
    assert doc["runs"][0]["states"] == 3026
    assert _check(tmp_path, monkeypatch) == 0
    assert "through deliver_cancel" in capsys.readouterr().out


def test_a_witness_whose_path_is_not_in_the_design_does_not_apply():
    # unguarded never refuses: its duplicates are served, and the only refusals are those at
    # the session's end, which are not the path duplicate_refused names
    cfg = replace(CFG, design=DESIGNS["unguarded"])
    assert not S.ACTION["refuse"].applies(cfg)
    assert not PROPERTY["duplicate_refused"].applies(cfg)
    assert PROPERTY["duplicate_refused"].applies(CFG)
    r = run("unguarded", "2026-07-28", "stdio")  # cfg's run, shared by the tests that ask for it
    assert r.cfg == cfg and r.symmetry
    assert not r.verdict("duplicate_refused").applies
    assert _without_path(cfg, "duplicate_refused")[2] == "reject"
