"""``check`` over every model, read through one result: exact verdict words, a JUnit file that
agrees with the exit code, and provers that assume nothing they have not proved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from mcp_inflight.model import lease as L
from mcp_inflight.model import lease_actions
from mcp_inflight.model.declare import Act, Spec, Var, always
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import declared as P
from mcp_inflight.proofs.declared import prove

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "designs"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "check", "--no-progress", *args],
        capture_output=True,
        text=True,
    )


@pytest.fixture
def fresh_results(tmp_path, monkeypatch) -> Path:
    """``tmp_path`` as the checkers' cache (``MCP_INFLIGHT_CACHE``): no result cached before the
    test is read.  Its ``native/`` is the default cache's directory of built engines, each keyed
    by a hash of its C source and flags (``proofs/native_build.py``), so an engine found there is the
    one a build would give."""

    from mcp_inflight.proofs import native_build

    built = native_build.cache_dir()
    try:
        built.mkdir(parents=True, exist_ok=True)
    except OSError:  # no default cache to share: the engines are built under tmp_path
        pass
    else:
        (tmp_path / "native").symlink_to(built, target_is_directory=True)
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    return tmp_path


def junit_failures(path) -> tuple[int, int, set[tuple[str, str]]]:
    suite = ET.parse(path).getroot()
    failed = {
        (c.get("classname"), c.get("name"))
        for c in suite.iter("testcase")
        if c.find("failure") is not None
    }
    assert int(suite.get("failures")) == len(failed)
    assert int(suite.get("tests")) == len(suite.findall("testcase"))
    return int(suite.get("tests")), int(suite.get("failures")), failed


# --- JUnit and the exit code ------------------------------------------------------------------


def test_a_failing_lease_mutant_fails_the_exit_code_and_the_junit_file_alike(tmp_path):
    junit = tmp_path / "lease.xml"
    p = check("--model", "lease", "--design", "unfenced", "--junit-xml", str(junit), "--json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is False and doc["models"] == ["lease"]
    failing = {(c["design"], c["property"]) for c in doc["results"] if not c["passed"]}
    assert ("unfenced", "single_writer") in failing and ("unfenced", "no_stale_write") in failing
    tests, failures, cases = junit_failures(junit)
    assert failures == len(failing) > 0
    assert {name.split(":", 1)[1] for _, name in cases} == {p for _, p in failing}
    # the same model at its safe design: exit 0 and a file with no failure, the hazard kept
    ok = tmp_path / "fenced.xml"
    q = check("--model", "lease", "--junit-xml", str(ok))
    assert q.returncode == 0, q.stdout
    tests, failures, _ = junit_failures(ok)
    assert failures == 0 and tests >= 12
    hazard = [
        c for c in ET.parse(ok).getroot().iter("testcase") if c.get("name") == "hazard:failover"
    ]
    assert len(hazard) == 1 and hazard[0].find("system-out") is not None


def test_every_mutant_of_the_small_models_is_a_failure_in_both_places(tmp_path):
    junit = tmp_path / "rounds.xml"
    p = check("--model", "rounds", "--design", "all", "--junit-xml", str(junit), "--json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    designs = {c["design"] for c in doc["results"]}
    assert len(designs) == 7
    failed_designs = {c["design"] for c in doc["results"] if not c["passed"]}
    assert failed_designs == designs - {"sealed"}
    _, failures, _ = junit_failures(junit)
    assert failures == sum(not c["passed"] for c in doc["results"])


def test_a_design_no_selected_model_has_is_a_usage_error():
    p = check("--model", "lease", "--design", "atomic")
    assert p.returncode == 2
    assert "no model of lease has a design 'atomic'" in p.stderr


# --- the verdict words --------------------------------------------------------------------------


def test_the_verdict_words_say_how_far_each_guarantee_reaches():
    p = check("--model", "all", "--revision", "2026-07-28", "--transport", "stdio", "--json")
    assert p.returncode == 0, p.stdout[-2000:]
    words = {}
    for c in json.loads(p.stdout)["results"]:
        if c["kind"] in ("invariant", "step") and c["run"] != "sensitivity":
            words.setdefault(c["model"], set()).add(c["verdict"])
    # unbounded induction: session and lease; induction on the bounds' universe: the small ones
    assert words["session"] <= {"proved", "not applicable"} and "proved" in words["session"]
    assert words["lease"] == {"proved"}
    for small in ("rounds", "resume", "tasks", "subscriptions"):
        assert words[small] == {"proved at bounds"}
    # typedness (every slot within its range) is proved, not assumed, in the same words
    typed = {
        c["model"]: c["verdict"]
        for c in json.loads(p.stdout)["results"]
        if c["property"] == "in_range"
    }
    assert typed == {
        "session": "proved",
        "lease": "proved",
        **{m: "proved at bounds" for m in ("rounds", "resume", "tasks", "subscriptions")},
    }
    assert (
        "(proved: session, lease; proved at bounds: rounds, resume, tasks, subscriptions)"
        in check("--revision", "2026-07-28", "--transport", "stdio").stdout
    )
    q = check("--model", "resume", "--no-prove", "--json")
    assert q.returncode == 0
    words = {
        c["verdict"]
        for c in json.loads(q.stdout)["results"]
        if c["kind"] == "invariant" and c["run"] != "sensitivity"
    }
    assert words == {"holds (explored)"}


# --- the provers assume nothing they have not proved ---------------------------------------


def _counter(invs: tuple) -> Spec:
    def inc_g(b, s):
        return s.x < 3

    def inc_e(b, s):
        return [Write("x", None, s.x + 1)]

    return Spec(
        "counter",
        "one",
        {},
        (Var("x", 0, 3, 0),),
        (Act("inc", (), inc_g, inc_e, lambda a: "x grows"),),
        invs,
        {},
    )


def at_most_one(b, s):
    """x stays at most 1 (false: x reaches 3)."""
    return s.x <= 1


def at_most_two(b, s):
    """x stays at most 2 (false too, but inductive if x <= 1 is assumed)."""
    return s.x <= 2


def test_a_failing_invariant_cannot_make_another_one_proved():
    both = prove(_counter((always(at_most_one), always(at_most_two))))
    assert both.verdicts["at_most_one"] == "not proved"
    # assuming at_most_one, at_most_two would follow; at_most_one is not inductive, so it is
    # not assumed, and at_most_two is judged on its own
    assert both.verdicts["at_most_two"] == "not proved"
    assert both.ctis["at_most_two"]["pre"] == {"x": "2"}


def test_a_property_implied_by_a_dropped_auxiliary_invariant_is_not_proved_through_it():
    """at_most_two follows from the auxiliary at_most_one, so while that one is kept it takes
    no step of its own; at_most_one is not preserved (inc from 1 gives 2), so it is dropped and
    at_most_two is judged on its own again: not proved, with its counterexample at x = 2."""
    spec = replace(_counter((always(at_most_two),)), aux=(always(at_most_one),))
    res = prove(spec)
    assert res.dropped == ["at_most_one"] and res.implied == []
    assert res.verdicts["at_most_two"] == "not proved"
    assert res.ctis["at_most_two"]["pre"] == {"x": "2"}


def test_the_lease_prover_proves_that_states_stay_well_typed(monkeypatch):
    assert P.prove(L.spec()).verdicts["in_range"] == "proved"
    # a renewal that writes a negative fence: out of its sort, so nothing is proved
    real = lease_actions.actions  # patched where spec_of reads it: lease.py's import
    bad = lambda b, s, r=None, w=None, i=None: [Write("fence", None, -1)]  # noqa: E731
    monkeypatch.setattr(
        L,
        "actions",
        lambda cfg: tuple(replace(a, effect=bad) if a.name == "renew" else a for a in real(cfg)),
    )
    res = P.prove(L.spec())
    assert res.verdicts["in_range"] == "not proved" and not res.ok
    assert all(res.verdicts[p.name] != "proved" for p in L.INVARIANTS)


@pytest.mark.parametrize("flag", ["--no-lease", "--no-paths"])
def test_the_old_section_flags_leave_models_out(flag):
    p = check("--revision", "2026-07-28", "--transport", "stdio", flag, "--no-prove", "--json")
    assert p.returncode == 0
    models = json.loads(p.stdout)["models"]
    assert ("lease" in models) == (flag != "--no-lease")
    assert ("rounds" in models) == (flag != "--no-paths")


# --- vacuity: an action that never fires fails the run ---------------------------------------


def test_a_dead_action_fails_the_run_with_its_name():
    from mcp_inflight.model.config import DESIGNS, Config
    from mcp_inflight.proofs.explorer import explore
    from mcp_inflight.proofs.outcome import ok, session_cells

    # one instance: no second request can meet the first under its id, so nothing is refused
    r = explore(Config(DESIGNS["atomic"], "2026-07-28", "stdio", ids=1, requests=1), progress=False)
    cells = session_cells([r], None)
    dead = [c for c in cells if c.prop == "every_action_fires"]
    assert len(dead) == 1 and not dead[0].passed and "refuse" in dead[0].message
    assert not ok(cells)
    # at the default bound every action of the profile fires
    r2 = explore(
        Config(DESIGNS["atomic"], "2026-07-28", "stdio", ids=2, requests=2), progress=False
    )
    assert not [c for c in session_cells([r2], None) if c.prop == "every_action_fires"]


def test_a_guard_that_cannot_hold_fails_a_small_model():
    from mcp_inflight.check_declared import as_run
    from mcp_inflight.proofs.declared import check as check_small

    def never_g(b, s):
        return s.x > 3

    def never_e(b, s):
        return [Write("x", None, 0)]

    spec = _counter((always(at_most_two),))
    spec = replace(spec, acts=spec.acts + (Act("reset", (), never_g, never_e, lambda a: "reset"),))
    dead = [c for c in as_run(check_small(spec)).cells if c.prop == "every_action_fires"]
    assert len(dead) == 1 and "reset" in dead[0].message and not dead[0].passed


# --- sensitivity: every property can fail, and fails where it must -----------------------------


def test_a_property_weakened_to_always_true_is_caught_by_its_breaker(monkeypatch):
    from mcp_inflight.proofs import sensitivity

    assert all(c.passed for c in sensitivity.lease())
    weak = replace(L.PROPERTY["single_writer"], fn=lambda b, s, c: True)
    monkeypatch.setattr(
        L, "PROPERTIES", tuple(weak if p.name == "single_writer" else p for p in L.PROPERTIES)
    )
    cells = {(c.prop, c.design): c for c in sensitivity.lease()}
    bad = cells["single_writer", "unfenced"]
    assert not bad.passed and str(bad.word) == "not broken"
    assert "got weaker" in bad.message
    assert cells["no_stale_write", "unfenced"].passed  # the same mutant still breaks the other


def test_a_property_nothing_breaks_is_untested(monkeypatch):
    from mcp_inflight.proofs import sensitivity

    monkeypatch.setattr(
        L, "BROKEN_BY", {k: v for k, v in L.BROKEN_BY.items() if k != "exclusive_claim"}
    )
    cells = [c for c in sensitivity.lease() if c.prop == "exclusive_claim"]
    assert len(cells) == 1 and not cells[0].passed and str(cells[0].word) == "untested"
    assert "BROKEN_BY" in cells[0].message


@pytest.mark.parametrize("design", ["derived-ids", "not-sticky", "global"])
def test_a_search_stopped_once_its_properties_fail_finds_the_same_shortest_traces(design):
    from mcp_inflight.model import tasks as T
    from mcp_inflight.proofs.explorer import NOT_JUDGED, explore

    spec = T.spec(design)
    targets = [p for p, es in T.BROKEN_BY.items() if design in es]
    # on the engine check runs (native where a C compiler is; its stop at ``until`` agrees with
    # the compiled engine's, tests/test_native_spec.py)
    whole = explore(spec, engine="fastest")
    early = explore(spec, until=targets, engine="fastest")
    assert targets and early.states < whole.states and not early.complete and not early.ok
    for name in targets:
        assert early.verdicts[name] == whole.verdicts[name] == "fails"
        assert early.traces[name] == whole.traces[name]
    # what the stopped search could not settle is said so, never "holds"
    assert "holds" not in early.verdicts.values()
    unsettled = [k for k, v in whole.verdicts.items() if v == "holds"]
    assert unsettled and all(early.verdicts[k] == NOT_JUDGED for k in unsettled)


def test_a_search_that_waits_for_liveness_runs_whole():
    from mcp_inflight.proofs.explorer import explore

    spec = L.spec("ignore-lost")
    live = [p.name for p in spec.props if p.kind == "liveness"]
    assert live
    assert explore(spec, until=live[:1]).complete
    with pytest.raises(ValueError, match="no property"):
        explore(spec, until=["no_such_property"])


def test_the_sensitivity_table_is_in_the_text_the_json_and_the_junit_file(tmp_path):
    junit = tmp_path / "s.xml"
    p = check("--model", "resume", "--junit-xml", str(junit), "--json")
    assert p.returncode == 0
    rows = [c for c in json.loads(p.stdout)["results"] if c["run"] == "sensitivity"]
    assert {c["property"] for c in rows} == {
        "replay_carries_own_events",
        "resumed_response_delivered",
        "delivered_once",
    }
    assert all(c["verdict"] == "broken (as it must be)" for c in rows)
    names = {c.get("classname") for c in ET.parse(junit).getroot().iter("testcase")}
    assert "resume.no-reattach.sensitivity" in names
    text = check("--model", "resume").stdout
    assert "Sensitivity" in text and "delivered_once" in text and "inclusive-replay" in text
    assert "Sensitivity" not in check("--model", "resume", "--no-sensitivity").stdout


# --- vacuity seen by the prover alone (check --no-explore) -----------------------------------


def test_the_prover_names_a_dead_action_and_a_property_that_folds_to_true(monkeypatch):
    from mcp_inflight.model import session_conditions as S
    from mcp_inflight.model.config import DESIGNS, Config
    from mcp_inflight.proofs import prove as PR
    from mcp_inflight.proofs.outcome import session_cells

    cfg = Config(DESIGNS["atomic"], "2026-07-28", "stdio", 2, 2)
    clean = PR.prove(cfg)
    assert clean.dead == [] and clean.vacuous == []
    # a guard that cannot hold: nothing is ever admitted
    monkeypatch.setitem(S.CONDITIONS, "claim_ok", lambda b, s, c, r, i: False)
    # a step property whose action name is misspelt: it judges no transition at all
    typo = replace(
        next(p for p in PR.PROPERTIES if p.name == "refusal_is_inert"),
        fn=lambda b, pre, post, c, action, r, i, out: b.Implies(action.name == "refusee", False),
    )
    monkeypatch.setattr(
        PR, "PROPERTIES", tuple(typo if p.name == typo.name else p for p in PR.PROPERTIES)
    )
    res = PR.prove(cfg)
    assert "admit" in res.dead
    assert "refusal_is_inert" in res.vacuous
    cells = {c.prop: c for c in session_cells(None, [res])}
    assert not cells["every_action_fires"].passed and "admit" in cells["every_action_fires"].message
    assert not cells["no_vacuous_property"].passed


# --- a proposed fix, described as knobs ----------------------------------------------------------


@pytest.mark.parametrize(
    "path, profile, broken",
    [
        ("free-id-on-cancel.json", ("2026-07-28", "stdio"), {"unique_in_flight", "owned_removal"}),
        ("one-registry-for-every-post.json", ("2026-07-28", "http"), {"no_refusal_across_posts"}),
    ],
)
def test_a_design_file_is_checked_and_its_counterexamples_shown(path, profile, broken):
    p = check(
        "--design-file",
        str(EXAMPLES / path),
        "--revision",
        profile[0],
        "--transport",
        profile[1],
        "--no-prove",
        "--no-sensitivity",
        "--json",
    )
    assert p.returncode == 1, p.stderr
    failing = {
        c["property"]
        for c in json.loads(p.stdout)["results"]
        if not c["passed"] and c["kind"] in ("invariant", "step")
    }
    assert failing == broken


def test_a_design_file_with_an_unknown_knob_is_a_usage_error(tmp_path):
    f = tmp_path / "d.json"
    f.write_text('{"name": "x", "free_on": "cancel", "frobnicate": true}')
    p = check("--design-file", str(f))
    assert p.returncode == 2 and "unknown knob(s) frobnicate; valid: claim" in p.stderr
    f.write_text('{"name": "x", "guard_write": "yes"}')
    p = check("--design-file", str(f))
    assert p.returncode == 2 and "guard_write must be true or false" in p.stderr


def test_check_takes_the_declared_models_bounds(fresh_results):
    """``check --bound NAME=N``: each selected declared model takes the names it has (the
    lease at 3 workers explores more states than at 2, and says so); a name no selected model
    has is a usage error, and the session model's bounds stay --ids and --requests."""
    from mcp_inflight import check_declared

    (two,) = check_declared.section("use", {"lease": ["fenced"]}, prove=False)
    (three,) = check_declared.section("use", {"lease": ["fenced"]}, False, {"workers": 3})
    assert three.states > two.states
    assert "3 workers" in check_declared.text([three])
    assert "2 workers" in check_declared.text([two])
    assert check_declared.key("lease", "fenced", False) != check_declared.key(
        "lease", "fenced", False, {"workers": 3}
    )
    (rounds,) = check_declared.section("use", {"rounds": ["sealed"]}, False, {"questions": 1})
    assert "questions=1" in rounds.label
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "check", "--model", "lease"]
        + ["--bound", "workers=3", "--no-prove", "--no-sensitivity", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MCP_INFLIGHT_CACHE": str(fresh_results)},
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["declared"][0]["bounds"]["workers"] == 3
    for argv, says in (
        (["--model", "tasks", "--bound", "workers=3"], "tasks: requests, ids"),
        (["--model", "session", "--bound", "ids=3"], "takes --ids and --requests"),
        (["--bound", "workers"], "not NAME=N"),
        (["--bound", "workers=0"], "at least 1"),
    ):
        q = subprocess.run(
            [sys.executable, "-m", "mcp_inflight", "check", *argv], capture_output=True, text=True
        )
        assert q.returncode == 2 and says in q.stderr, (argv, q.stderr)


def test_check_on_one_core_runs_every_section_in_its_process_with_the_same_cells(
    monkeypatch, capsys
):
    """Without worker processes (one core, or no fork), check runs each section when its
    result is asked for: the same cells, in the same order, as with its two workers."""
    from mcp_inflight import check_sections
    from mcp_inflight.cli import main

    argv = ["check", "--model", "all", "--revision", "2026-07-28", "--transport", "stdio"]
    argv += ["--json", "--no-progress", "--no-prove"]

    def cells() -> list[tuple]:
        assert main(argv) == 0
        doc = json.loads(capsys.readouterr().out)
        return [
            (c["model"], c["design"], c["run"], c["property"], c["verdict"]) for c in doc["results"]
        ]

    pooled = cells()
    made: list = []
    real = check_sections.pool
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setattr(check_sections, "pool", lambda *a: made.append(real(*a)) or made[-1])
    inline = cells()
    assert made == [None]  # no worker was started
    assert inline == pooled and len({c[0] for c in inline}) == 6


# --- the declared models' section of check ------------------------------------------------------


def test_every_declared_model_names_the_interface_check_reads():
    from mcp_inflight import check_declared
    from mcp_inflight.model.declare import DECLARED_MODELS

    for name in DECLARED_MODELS:
        m = check_declared.module(name)
        assert m.DESIGNS and set(m.DESIGN_DOCS) == set(m.DESIGNS), name
        assert isinstance(m.HAZARDS, tuple) and all(h.bound for h in m.HAZARDS), name
        assert m.spec(check_declared.designs_of(name)[0]).model == name


def test_design_all_shows_a_models_designs_side_by_side(fresh_results):
    from mcp_inflight import check_declared

    bounds = {"questions": 1, "max_rounds": 1, "tokens": 3}
    runs = check_declared.section(None, {"rounds": ["sealed", "no-nonce"]}, False, bounds)
    text = check_declared.text(runs)
    table = text[text.index("  the designs side by side:") :].splitlines()
    assert table[1].split() == ["property", "sealed", "no-nonce"]
    row = next(ln for ln in table if ln.split()[0] == "replay_refused")
    assert row.split()[1:] == ["holds", "(explored)", "fails"]
    # one design: no table
    assert "side by side" not in check_declared.text(runs[:1])
