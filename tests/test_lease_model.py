"""The lease protocol of many workers (model/lease.py): explored, proved, and broken by each
mutant where it should break, with the shape of the shortest trace."""

from __future__ import annotations

import json
import re

import pytest
import z3

from mcp_inflight import cli_lease
from mcp_inflight.model import lease as L
from mcp_inflight.proofs import lease as P

INVARIANTS = {p.name for p in L.INVARIANTS}
WITNESSES = {p.name for p in L.WITNESSES}


def design(name: str, **bounds: int) -> L.Config:
    return L.Config(L.DESIGNS[name], **bounds)


@pytest.fixture(scope="module")
def fenced() -> P.ExploreResult:
    return P.explore(L.Config())


@pytest.fixture(scope="module")
def fenced_proof() -> P.ProveResult:
    return P.prove(L.Config())


@pytest.fixture(scope="module")
def failover() -> P.HazardResult:
    return P.hazard(L.Config())


def actions(v: P.Verdict) -> list[str]:
    assert v.trace is not None
    return [s.action for s in v.trace]


# --- fenced: everything holds, is proved, and every witness is reached ------------------------


def test_fenced_holds_every_property_and_reaches_every_witness(fenced):
    assert fenced.complete and fenced.ok, [v.name for v in fenced.verdicts if not v.holds]
    names = {v.name for v in fenced.verdicts}
    assert names == {p.name for p in L.PROPERTIES}
    for v in fenced.verdicts:
        if v.kind == "witness":
            assert v.trace, v.name  # the path that reaches it
    # the witness the double admission needs: A's claim expired, another worker claimed the id
    assert actions(fenced.verdict("lease_expired_and_reclaimed"))[-2:] == ["expire", "claim"]


def test_fenced_invariants_are_proved_by_induction_with_inductive_auxiliaries(fenced_proof):
    res = fenced_proof
    assert res.ok and res.to_json()["ok"] is True
    assert {p.name for p in res.proofs if p.kind == "invariant"} == INVARIANTS
    assert all(p.status == "proved" for p in res.proofs), [
        (p.name, p.status) for p in res.proofs if not p.proved
    ]
    assert {p.name for p in res.proofs if p.kind == "auxiliary"} == {a.name for a in L.AUXILIARY}


# --- each mutant breaks what it should, with the expected shortest trace ---------------------


def test_unfenced_double_admission_after_expiry_and_the_stale_write():
    res = P.explore(design("unfenced"))
    assert {v.name for v in res.broken()} == {"single_writer", "no_stale_write"}
    sw = res.verdict("single_writer")
    assert actions(sw)[-3:] == ["pause", "expire", "claim"]
    # the claim that makes the second writer is another worker's than the paused one
    paused = sw.trace[-3].args["w"]
    assert not sw.trace[-1].story.startswith(paused)
    assert "granted token 2" in sw.trace[-1].story
    stale = res.verdict("no_stale_write")
    assert actions(stale)[-4:] == ["pause", "expire", "resume", "write"]
    assert "its claim is not the current one" in stale.trace[-1].story


def test_check_then_set_lets_two_claims_pass_the_check():
    res = P.explore(design("check-then-set", workers=1))
    assert {v.name for v in res.broken()} == {"exclusive_claim"}
    tr = actions(res.verdict("exclusive_claim"))
    assert tr == ["arrive", "arrive", "claim", "claim", "claim_set", "claim_set"]
    assert "a held claim replaced" in res.verdict("exclusive_claim").trace[-1].story


def test_release_by_id_lets_a_stale_owner_delete_the_new_claim():
    res = P.explore(design("release-by-id", workers=1))
    assert {v.name for v in res.broken()} == {"owned_release"}
    v = res.verdict("owned_release")
    assert actions(v)[2:] == ["claim", "pause", "expire", "resume", "claim", "release"]
    assert "not its own" in v.trace[-1].story


def test_ignore_lost_keeps_a_refused_instance_running():
    res = P.explore(design("ignore-lost", workers=1, requests=1))
    assert {v.name for v in res.broken()} == {"lost_lease_ends_request"}
    assert actions(res.verdict("lost_lease_ends_request"))[-3:] == ["expire", "resume", "renew"]


def test_no_ttl_never_frees_a_crashed_workers_id(fenced):
    res = P.explore(design("no-ttl", workers=1, requests=1))
    v = res.verdict("ids_free_after_lease")
    assert not v.holds
    assert actions(v) == ["arrive", "claim", "crash"]
    assert all(x.holds for x in res.verdicts if x.kind == "invariant")
    assert not res.verdict("crash_freed").holds
    assert fenced.verdict("ids_free_after_lease").holds


def test_failover_hazard_breaks_single_writer_even_on_fenced(failover):
    h = failover
    broken = {v.name: v for v in h.broken}
    assert "single_writer" in broken
    tr = broken["single_writer"].trace
    assert [s.action for s in tr][-3:] == ["claim", "failover", "claim"]
    assert "granted token 1" in tr[-1].story and "granted token 1" in tr[-3].story
    # the action exists only in the hazard's run
    assert "failover" not in {a.name for a in L.actions_for(L.Config())}


# --- one text, two readings --------------------------------------------------------------------


def test_the_z3_reading_agrees_with_the_concrete_one_on_explored_transitions():
    cfg = L.Config(failover=True, requests=2, ids=2)
    b = L.backend(cfg)
    sb = P.Symbolic({k: v for k, v in L.domains(cfg).items()})
    seen, frontier, checked = {L.initial(cfg)}, [L.initial(cfg)], 0
    while frontier and checked < 150:
        s = frontier.pop(0)
        zs = P.from_concrete(s)
        for m in L.moves(cfg):
            g, out, writes = m.action.run(sb, zs, cfg, m.r, m.w, m.i)
            t = L.take(cfg, s, m, b)
            assert z3.is_true(z3.simplify(P.to_bool(g))) == (t is not None), (m, s)
            if t is None:
                continue
            checked += 1
            post = P.apply_writes(zs, writes)
            for f in L.FIELDS:
                want = getattr(t[0], f.name)
                got = getattr(post, f.name)
                if f.key is None:
                    assert P._py(z3.simplify(got)) == want, (m, f.name)
                else:
                    assert tuple(P._py(z3.simplify(x)) for x in got.slots) == want, (m, f.name)
            for k, v in t[1].items():
                assert P._py(z3.simplify(P.to_bool(out[k]))) == bool(v), (m, k)
            if t[0] not in seen:
                seen.add(t[0])
                frontier.append(t[0])
    assert checked >= 150


# --- the command line ---------------------------------------------------------------------------


def test_lease_cli_reports_a_mutant_with_its_trace_and_fails(capsys):
    rc = cli_lease.run(["--design", "no-ttl", "--no-prove", "--no-hazard", "--requests", "1"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "no-ttl: counterexample: ids_free_after_lease" in out
    assert "worker w1 crashes (kill -9)" in out and "FAILED: no-ttl" in out


def test_lease_cli_json_and_usage(capsys):
    argv = ["--design", "ignore-lost", "--json", "--workers", "1", "--requests", "1"]
    rc = cli_lease.run(argv + ["--no-prove", "--no-hazard"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and doc["ok"] is False and doc["judged"] == "ignore-lost"
    assert doc["bounds"] == {"workers": 1, "requests": 1, "ids": 1} and doc["hazards"] == []
    (d,) = doc["designs"]
    assert d["prove"] is None
    props = {p["name"]: p for p in d["explore"]["properties"]}
    assert props["lost_lease_ends_request"]["holds"] is False
    assert props["lost_lease_ends_request"]["trace"][-1]["action"] == "renew"
    assert props["lost_lease_ends_request"]["trace"][-1]["changes"] == {
        "told[A]": ["nothing", "renewal refused"]
    }
    with pytest.raises(SystemExit) as e:
        cli_lease.run(["--design", "nope"])
    assert e.value.code == 2


def test_the_check_section_reports_fenced_and_the_hazard_and_is_cached(
    fenced, fenced_proof, failover, monkeypatch, tmp_path
):
    from mcp_inflight.proofs import cache

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    res = cli_lease.LeaseRun(L.Config(), ["fenced"], {"fenced": fenced}, {"fenced": fenced_proof})
    res.hazard = failover
    assert res.ok
    text = cli_lease.check_text(res)
    # proved by induction for any number of workers, instances and ids: the exact word
    assert re.search(r"invariant\s+single_writer\s+proved\n", text)
    assert re.search(r"liveness\s+ids_free_after_lease\s+holds \(explored\)\n", text)
    assert re.search(r"hazard\s+failover\s+fails\s+\(hazard: reported, never fails", text)
    assert "breaks single_writer, owned_release" in text
    key = cache.source_key("lease-check", repr(L.Config()))
    cache.store("lease", key, res)
    assert cli_lease.check_section("use").to_json() == res.to_json()


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
    res = P.prove(design(name))
    assert {p.name for p in res.proofs if p.kind == "invariant" and not p.proved} == broken
    for n in broken:
        cti = res.proof(n).cti
        assert cti is not None and cti.pre is not None and cti.changes is not None
    assert not res.ok


# --- the declaration refuses what it cannot mean -------------------------------------------------


def test_the_declaration_refuses_an_unknown_knob_fairness_or_sort():
    from mcp_inflight.model.declare import Act, Spec, Var, eventually

    with pytest.raises(ValueError, match="unknown knob"):
        L.FENCED.mutant("typo", "a knob that does not exist", fenced_write=False)
    assert L.MUTANTS["unfenced"].fenced_writes is False and L.FENCED.fenced_writes is True

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
