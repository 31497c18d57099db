"""The lease protocol of many workers (model/lease.py): explored, proved, and broken by each
mutant where it should break, with the shape of the shortest trace."""

from __future__ import annotations

import json
import re

import pytest
import z3

from mcp_inflight import check_declared
from mcp_inflight.cli import main as cli
from mcp_inflight.model import lease as L
from mcp_inflight.model import lease_state as LS
from mcp_inflight.model.declare import Move
from mcp_inflight.proofs import declared as P
from mcp_inflight.proofs.stepping import take
from mcp_inflight.proofs.symbolic import to_bool
from mcp_inflight.proofs.universe import Universe

INVARIANTS = {p.name for p in L.INVARIANTS}
WITNESSES = {p.name for p in L.WITNESSES}


def design(name: str, **bounds: int) -> P.Explored:
    return P.explore(L.spec(name, **bounds))


@pytest.fixture(scope="module")
def fenced() -> P.Explored:
    return P.explore(L.spec())


@pytest.fixture(scope="module")
def fenced_proof() -> P.Proved:
    return P.prove(L.spec())


@pytest.fixture(scope="module")
def failover() -> P.HazardRun:
    return P.hazard(L.FAILOVER, L.spec(failover=1))


def actions(res: P.Explored, name: str) -> list[str]:
    return [s["action"] for s in res.traces[name]]


def last(res: P.Explored, name: str, n: int = -1) -> dict:
    return res.traces[name][n]


# --- fenced: everything holds, is proved, and every witness is reached ------------------------


def test_fenced_holds_every_property_and_reaches_every_witness(fenced):
    assert fenced.complete and fenced.ok, fenced.broken()
    assert not fenced.dead_actions and not fenced.errors
    names = {k for k in fenced.verdicts if not k.startswith("aux:")}
    assert names == {p.name for p in L.PROPERTIES}
    for p in L.WITNESSES:
        assert fenced.traces[p.name], p.name  # the path that reaches it
    # the witness the double admission needs: A's claim expired, another worker claimed the id
    assert actions(fenced, "lease_expired_and_reclaimed")[-2:] == ["expire", "claim"]
    # the liveness property names the fairness it rests on: the expiry's
    (live,) = [p for p in fenced.spec.props if p.kind == "liveness"]
    assert live.fair == ("expire",) and fenced.spec.act("expire").fair == "weak"


def test_fenced_invariants_are_proved_for_any_size_with_inductive_auxiliaries(fenced_proof):
    res = fenced_proof
    assert res.ok and res.unbounded and res.to_json()["ok"] is True
    assert set(res.verdicts) == INVARIANTS | {"in_range"}
    assert all(v == "proved" for v in res.verdicts.values()), res.verdicts
    assert res.kept == [a.name for a in L.AUXILIARY] and not res.dropped


# --- each mutant breaks what it should, with the expected shortest trace ---------------------


def test_unfenced_double_admission_after_expiry_and_the_stale_write():
    res = design("unfenced")
    assert set(res.broken()) == {"single_writer", "no_stale_write"}
    assert actions(res, "single_writer")[-3:] == ["pause", "expire", "claim"]
    # the claim that makes the second writer is another worker's than the paused one
    paused = LS.worker_name(last(res, "single_writer", -3)["args"]["w"])
    assert not last(res, "single_writer")["story"].startswith(paused)
    assert "granted token 2" in last(res, "single_writer")["story"]
    assert actions(res, "no_stale_write")[-4:] == ["pause", "expire", "resume", "write"]
    assert "its claim is not the current one" in last(res, "no_stale_write")["story"]


def test_check_then_set_lets_two_claims_pass_the_check():
    res = design("check-then-set", workers=1)
    assert res.broken() == ["exclusive_claim"]
    tr = actions(res, "exclusive_claim")
    assert tr == ["arrive", "arrive", "claim", "claim", "claim_set", "claim_set"]
    assert "a held claim replaced" in last(res, "exclusive_claim")["story"]


def test_release_by_id_lets_a_stale_owner_delete_the_new_claim():
    res = design("release-by-id", workers=1)
    assert res.broken() == ["owned_release"]
    assert actions(res, "owned_release")[2:] == [
        "claim",
        "pause",
        "expire",
        "resume",
        "claim",
        "release",
    ]
    assert "not its own" in last(res, "owned_release")["story"]


def test_ignore_lost_keeps_a_refused_instance_running():
    res = design("ignore-lost", workers=1, requests=1)
    assert res.broken() == ["lost_lease_ends_request"]
    assert actions(res, "lost_lease_ends_request")[-3:] == ["expire", "resume", "renew"]


def test_no_ttl_never_frees_a_crashed_workers_id(fenced):
    res = design("no-ttl", workers=1, requests=1)
    assert res.broken() == ["ids_free_after_lease"]
    assert actions(res, "ids_free_after_lease") == ["arrive", "claim", "crash"]
    assert res.verdicts["crash_freed"] == "not reached"
    assert fenced.verdicts["ids_free_after_lease"] == "holds"
    # without the expiry the liveness property rests on no fairness at all
    assert res.spec.prop("ids_free_after_lease").fair == ()


def test_failover_hazard_breaks_single_writer_even_on_fenced(failover):
    h = failover
    assert "single_writer" in h.broken
    tr = h.run.traces["single_writer"]
    assert [s["action"] for s in tr][-3:] == ["claim", "failover", "claim"]
    assert "granted token 1" in tr[-1]["story"] and "granted token 1" in tr[-3]["story"]
    # the action exists only in the hazard's run
    assert "failover" not in {a.name for a in L.spec().acts}


# --- one text, two readings --------------------------------------------------------------------


def test_the_z3_reading_agrees_with_the_concrete_one_on_explored_transitions():
    """The prover's reading (guard, output, writes as z3 terms on a finite universe) and the
    explorer's (the concrete logic) agree on every move from the first explored states."""
    spec = L.spec(failover=1, requests=2, ids=2)
    U = Universe(spec, {}, "agree")
    b = spec.logic()

    def py(x):
        x = z3.simplify(to_bool(x) if isinstance(x, bool) else x)
        return True if z3.is_true(x) else False if z3.is_false(x) else x.as_long()

    seen, frontier, checked = {spec.initial()}, [spec.initial()], 0
    while frontier and checked < 150:
        s = frontier.pop(0)
        zs = U.literal(s)
        for m in spec.moves():
            kw = m.kw
            g = m.act.guard(U.b, zs, **kw)
            t = take(spec, s, m, b)
            assert py(g) == (t is not None), (m, s)
            if t is None:
                continue
            checked += 1
            post = U.apply(zs, m.act.effect(U.b, zs, **kw))
            for v in spec.vars:
                want, got = getattr(t[0], v.name), getattr(post, v.name)
                if v.keys is None:
                    assert py(got) == want, (m, v.name)
                else:
                    assert tuple(py(x) for x in got.slots) == want, (m, v.name)
            out = m.act.outputs(U.b, zs, **kw)
            for k, val in t[1].items():
                assert py(out[k]) == bool(val), (m, k)
            if t[0] not in seen:
                seen.add(t[0])
                frontier.append(t[0])
    assert checked >= 150
    assert isinstance(Move(spec.act("claim"), (("r", 0),)), Move)


# --- the command line ---------------------------------------------------------------------------


def test_check_reports_a_lease_mutant_with_its_trace_and_fails(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    rc = cli(
        ["check", "--model", "lease", "--design", "no-ttl", "--no-prove", "--no-sensitivity"]
        + ["--bound", "requests=1", "--no-progress"]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "counterexample: ids_free_after_lease on lease no-ttl" in out
    assert "worker w1 crashes (kill -9)" in out and out.endswith(
        "FAILED: see the table and counterexamples above\n"
    )


def test_check_json_of_a_lease_mutant_and_usage(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    argv = ["check", "--model", "lease", "--design", "ignore-lost", "--json", "--no-progress"]
    rc = cli(
        argv
        + ["--bound", "workers=1", "--bound", "requests=1"]
        + ["--no-prove", "--no-sensitivity"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and doc["ok"] is False and doc["models"] == ["lease"]
    (d,) = doc["declared"]
    assert d["design"] == "ignore-lost" and d["proved"] is None and d["hazards"] == []
    assert d["bounds"] == {"workers": 1, "requests": 1, "ids": 1}
    props = d["explored"]["properties"]
    assert props["lost_lease_ends_request"]["verdict"] == "fails"
    assert props["lost_lease_ends_request"]["trace"][-1]["action"] == "renew"
    assert props["lost_lease_ends_request"]["trace"][-1]["changes"] == {
        "told[A]": ["nothing", "renewal refused"]
    }
    with pytest.raises(SystemExit) as e:
        cli(["check", "--model", "lease", "--design", "nope"])
    assert e.value.code == 2
    # the command the lease had of its own is folded into check, and says where
    assert cli(["lease"]) == 2 and "check --model lease" in capsys.readouterr().err


def test_the_check_section_reports_fenced_and_the_hazard_and_is_cached(
    fenced, fenced_proof, failover, monkeypatch, tmp_path
):
    from mcp_inflight.proofs import cache

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    res = check_declared.as_run(P.Checked(fenced, fenced_proof), [failover])
    assert res.ok and res.unbounded
    text = check_declared.text([res])
    # proved by induction for any number of workers, instances and ids: the exact word
    assert re.search(r"invariant\s+single_writer\s+proved\n", text)
    assert re.search(
        r"liveness\s+ids_free_after_lease\s+holds \(explored\)  \(fair: expire\)\n", text
    )
    assert re.search(r"hazard\s+failover\s+fails\s+\(hazard: reported, never fails", text)
    assert "breaks single_writer, owned_release" in text
    assert [h["name"] for h in res.json["hazards"]] == ["failover"]
    cache.store("declared", check_declared.key("lease", "fenced", True), res)
    assert check_declared.section("use", {"lease": ["fenced"]}) == [res]


# --- the prover's counterexamples on the mutants (slow: a few seconds each) --------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, broken",
    [
        ("unfenced", {"single_writer", "no_stale_write"}),
        ("check-then-set", {"exclusive_claim"}),
        ("release-by-id", {"owned_release"}),
        ("ignore-lost", {"lost_lease_ends_request"}),
    ],
)
def test_the_prover_refutes_each_mutant_with_a_counterexample_to_induction(name, broken):
    res = P.prove(L.spec(name))
    assert res.unbounded
    assert {n for n, v in res.verdicts.items() if v != "proved"} == broken
    for n in broken:
        cti = res.ctis[n]
        assert cti["pre"] and cti["universe"] and isinstance(cti["changes"], dict), cti
    assert not res.ok


# --- the declaration refuses what it cannot mean -------------------------------------------------


def test_the_declaration_refuses_an_unknown_knob_fairness_or_sort():
    from mcp_inflight.model.declare import Act, Spec, Var, eventually

    with pytest.raises(ValueError, match="unknown knob"):
        LS.FENCED.mutant("typo", "a knob that does not exist", fenced_write=False)
    assert LS.MUTANTS["unfenced"].fenced_writes is False and LS.FENCED.fenced_writes is True

    def goal(b, s):
        """x reaches 1."""
        return s.x == 1

    inc = Act("inc", (), lambda b, s: True, lambda b, s: [], lambda a: "inc")
    with pytest.raises(ValueError, match="rests on the fairness of 'tick'"):
        Spec("t", "one", {}, (Var("x", 0, 1, 0),), (inc,), (eventually("tick")(goal),), {})
    with pytest.raises(ValueError, match="unbounded sort 'n'"):
        Spec("t", "one", {}, (Var("x", 0, 1, 0),), (inc,), (), {}, unbounded=("n",))
    with pytest.raises(ValueError, match="unknown fairness"):
        Act("inc", (), inc.guard, inc.effect, inc.story, fair="strong")
    # a ghost is a role, and the old flag still says it
    assert Var("g", 0, 1, 0, ghost=True).role == "ghost"
    assert Var("g", 0, 1, 0, role="ghost").ghost
