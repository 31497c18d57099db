"""model/rounds.py: input-required rounds with a client-held requestState.

The ``sealed`` design holds every property and reaches every witness (explored, and proved by
induction); each mutant breaks the properties it removes a safeguard for, with a shortest
trace; and ``impl/request_state.py`` accepts and refuses exactly what ``sealed`` does along
every transition of the explored space (and disagrees with each mutant somewhere).
"""

from __future__ import annotations

import json
import re

import pytest

from mcp_inflight.impl.request_state import RequestStates, StateLimit, StateRefused, call_binding
from mcp_inflight.model import rounds
from mcp_inflight.proofs.declared import check, cti_lines, drive, explore, prove, trace_text

STEP_PROPS = (
    "answers_reach_asker",
    "forged_refused",
    "replay_refused",
    "cross_call_refused",
    "expired_refused",
)

#: the properties each mutant breaks (the explorer's verdict "fails")
BROKEN = {
    "unsigned": {"answers_reach_asker", "forged_refused"},
    "no-expiry": {"replay_refused", "expired_refused"},
    "no-call-digest": {"answers_reach_asker", "cross_call_refused"},
    "no-nonce": {"replay_refused"},
    "unbounded-rounds": {"rounds_end"},
    "stateless": {*STEP_PROPS, "rounds_end"},
}


#: the default tests' bounds: two rounds for the client's call (tokens=3 is enough to reach every
#: witness), and the smallest space where each mutant shows (one question, one round)
SMALL = {"tokens": 3}
TINY = {"questions": 1, "max_rounds": 1, "tokens": 3}


def _failing(res):
    return {p.name for p in res.spec.props if res.verdicts[p.name] == "fails"}


def test_sealed_holds_everything_and_reaches_every_witness():
    res = explore(rounds.spec("sealed", **SMALL))
    assert res.ok, res.verdicts
    assert not res.errors
    assert all(res.coverage.values()), res.coverage  # every action is taken somewhere
    tr = res.traces["completes_after_rounds"]
    assert [s["action"] for s in tr].count("retry") == 2  # a call completes after two rounds
    assert tr[-1]["action"] == "complete"
    assert res.traces["replayed_state_refused"][-1]["action"] == "present"


@pytest.mark.parametrize("design", sorted(BROKEN))
def test_each_mutant_breaks_what_it_removes(design):
    res = explore(rounds.spec(design, **TINY))
    assert _failing(res) == BROKEN[design]
    for name in BROKEN[design]:
        trace = res.traces[name]
        assert trace and trace[0]["action"] == "start"
        assert trace_text(trace)[0].startswith("  1. ")


def test_forged_state_trace_is_shortest_and_readable():
    res = explore(rounds.spec("unsigned", **TINY))
    trace = res.traces["forged_refused"]
    assert [s["action"] for s in trace] == ["start", "forge"]
    assert trace[0]["changes"] == {"phase[c0]": ["idle", "running"]}
    assert trace[1]["changes"] == {}  # a presentation changes no variable
    json.dumps(res.to_json())


def test_sealed_is_proved_by_induction():
    ok = prove(rounds.spec("sealed", **TINY))
    assert ok.ok, (ok.verdicts, ok.dropped)
    assert not ok.dropped
    assert set(ok.verdicts) == {p.name for p in ok.spec.props if p.kind in ("always", "step")} | {
        "in_range"
    }


@pytest.mark.slow
def test_a_mutant_comes_back_as_a_counterexample_to_induction():
    bad = prove(rounds.spec("no-nonce", **TINY))
    assert bad.verdicts["replay_refused"] == "not proved"
    assert "spent_recorded" in bad.dropped  # the auxiliary invariant that needs the record
    cti = bad.ctis["replay_refused"]
    assert cti["action"] in ("retry", "present") and cti["pre"] and cti["post"]
    assert any("counterexample to induction" in line for line in cti_lines(cti))


# --- the runtime against the model ----------------------------------------------------------

SECRET = b"k" * 32
TTL = 1000.0


class World:
    """impl/request_state.py in one state of the model: its record of used states, its clock,
    and the tokens minted so far (by model slot)."""

    def __init__(self, max_rounds: int):
        self.now = 0.0
        self.max_rounds = max_rounds
        self.rs = RequestStates(SECRET, ttl=TTL, max_rounds=max_rounds, clock=lambda: self.now)
        self.tokens: dict[int, str] = {}
        self.minted: dict[int, float] = {}

    def copy(self) -> World:
        w = World(self.max_rounds)
        w.now = self.now
        w.tokens = dict(self.tokens)
        w.minted = dict(self.minted)
        w.rs._used = set(self.rs._used)  # the record of used nonces, as the runtime keeps it
        w.rs._expiries = list(self.rs._expiries)
        return w


def binding(c: int) -> str:
    return call_binding("tools/call", {"name": "asks", "arguments": {"call": c}})


def answers(n: int) -> dict:
    return {f"elicitation/create#{k + 1}": {"n": k} for k in range(n)}


def runtime_step(d: rounds.Design, seen: set[str] | None = None):
    """The runtime counterpart of each move; the model read at design ``d``.  ``seen``
    collects the runtime's outcomes (``accepted``, a refusal's reason, ``rounds``)."""
    b = None
    seen = set() if seen is None else seen

    def step(w: World, pre, m, post) -> list[str]:
        nonlocal b
        from mcp_inflight.model.logic import Concrete

        b = b or Concrete({})
        k = m.kw
        if m.name == "ask":
            c = k["c"]
            w.now += 1
            try:
                token = w.rs.issue(
                    binding(c),
                    answers(pre.run_ans[c]),
                    [f"elicitation/create#{pre.run_ans[c] + 1}"],
                    pre.run_round[c] + 1,
                )
            except StateLimit as e:
                seen.add(e.limit)
                if post.phase[c] != rounds.FAILED:
                    return [f"runtime: over the bound ({e.limit}); model: {post.phase[c]}"]
                return []
            if post.phase[c] == rounds.FAILED:
                return ["runtime issued a state the model says is over the bound"]
            w.tokens[pre.nt] = token
            w.minted[pre.nt] = w.now
            return []
        if m.name == "expire":
            w.now = max(w.now, w.minted[k["t"]] + TTL)
            return []
        v, t = rounds.presented(d, b, pre, m)
        if v is None:
            return []
        c = k["c"]
        if t is None:  # forged: sealed under another key
            token = RequestStates(b"f" * 32).issue(binding(c), answers(2), ["x"], 1)
        else:
            token = w.tokens[t]
        response = {f"elicitation/create#{pre.t_ans[t] + 1 if t is not None else 1}": "yes"}
        try:
            got = w.rs.resume(token, binding(c), response)
        except StateRefused as e:
            seen.add(e.reason)
            if rounds.VERDICTS[v] != e.reason:
                return [f"runtime refused ({e.reason}); model: {rounds.VERDICTS[v]}"]
            return []
        seen.add("accepted")
        if v != rounds.ACCEPT:
            return [f"runtime accepted; model refuses ({rounds.VERDICTS[v]})"]
        if m.name == "retry" and (got.round, len(got.answers)) != (
            post.run_round[c],
            post.run_ans[c],
        ):
            return [
                f"runtime resumes round {got.round} with {len(got.answers)} answers; model: "
                f"round {post.run_round[c]} with {post.run_ans[c]}"
            ]
        return []

    return step


def _drive(design: str, seen: set[str] | None = None, **bounds):
    sp = rounds.spec(design, **bounds)
    return drive(
        sp,
        lambda: World(sp.bounds["max_rounds"]),
        runtime_step(rounds.DESIGNS[design], seen),
        World.copy,
    )


def test_runtime_accepts_exactly_what_sealed_accepts():
    seen: set[str] = set()
    assert _drive("sealed", seen, **SMALL) == []
    # every outcome was met on the way: the agreement is not vacuous
    assert seen == {"accepted", "signature", "expired", "call", "replayed", "rounds"}


@pytest.mark.parametrize("design", ["unsigned", "no-expiry", "no-call-digest", "no-nonce"])
def test_runtime_disagrees_with_each_mutant(design):
    problems = _drive(design, **TINY)
    assert problems and "runtime refused" in problems[0]


def test_runtime_disagrees_with_unbounded_rounds():
    problems = _drive("unbounded-rounds", **TINY)
    assert problems and "over the bound" in problems[0]


@pytest.mark.slow
def test_sealed_at_larger_bounds():
    """Three questions, a bound of three rounds: explored, proved, and the runtime driven along
    every transition."""
    bounds = {"questions": 3, "max_rounds": 3, "tokens": 4}
    res = check(rounds.spec("sealed", **bounds))
    assert res.ok, res.to_json()
    assert _drive("sealed", None, **bounds) == []


# --- the command line -------------------------------------------------------------------------

TINY_ARGS = ["--bound", "questions=1", "--bound", "max_rounds=1", "--bound", "tokens=3"]
QUICK = ["--no-prove", "--no-sensitivity", "--no-progress"]


def test_check_passes_on_sealed_and_shows_a_mutant_caught(capsys, monkeypatch, tmp_path):
    from mcp_inflight.cli import main

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    assert main(["check", "--model", "rounds", *QUICK, *TINY_ARGS]) == 0
    out = capsys.readouterr().out
    assert "rounds sealed" in out and out.startswith("\nInput-required rounds")
    argv = ["check", "--model", "rounds", "--design", "no-nonce", "--json", *QUICK]
    assert main([*argv, *TINY_ARGS]) == 1
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["declared"]
    assert run["design"] == "no-nonce" and run["proved"] is None
    assert run["explored"]["properties"]["replay_refused"]["verdict"] == "fails"
    assert run["explored"]["properties"]["replay_refused"]["trace"][-1]["action"] == "present"
    # one state slot: the client's call cannot complete after two rounds (a witness missed)
    assert main(["check", "--model", "rounds", *QUICK, "--bound", "tokens=1"]) == 1
    assert re.search(
        r"witness\s+completes_after_rounds\s+not reached\s+FAILED", capsys.readouterr().out
    )


def test_check_usage_errors(capsys):
    from mcp_inflight.cli import main

    with pytest.raises(SystemExit) as e:
        main(["check", "--model", "rounds", "--bound", "events=3"])
    assert e.value.code == 2
    assert "--bound events: not a bound of the selected models" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["check", "--model", "rounds", "--design", "nope"])
    assert e.value.code == 2
    assert main(["paths"]) == 2 and "check --model rounds" in capsys.readouterr().err


# --- the one checker on another model ---------------------------------------------------------


def test_the_one_checker_reads_another_model():
    """The one checker (proofs/declared.py) on another model: explored and proved with its auxiliary
    invariant; without it, a counterexample to induction (two states and the move)."""
    from mcp_inflight.model.declare import Act, Spec, Var, always
    from mcp_inflight.model.logic import NONE, Write

    def take_g(b, s, c):
        return s.owner == NONE

    def take_e(b, s, c):
        return [Write("owner", None, c), Write("held", c, 1)]

    def give_g(b, s, c):
        return s.owner == c

    def give_e(b, s, c):
        return [Write("owner", None, NONE), Write("held", c, 0)]

    def one_holder(b, s):
        """At most one client holds the lock."""
        return b.Not(b.And(s.held[0] == 1, s.held[1] == 1))

    def held_by_owner(b, s):
        """A client holds the lock exactly when it is the owner."""
        return b.ForAll("client", lambda c: (s.held[c] == 1) == (s.owner == c))

    def lock(aux):
        return Spec(
            "lock",
            "safe",
            {"clients": 2},
            (Var("owner", NONE, 1, NONE), Var("held", 0, 1, 0, keys=2)),
            (
                Act("take", (("c", 2),), take_g, take_e, lambda a: f"c{a['c']} takes"),
                Act("give", (("c", 2),), give_g, give_e, lambda a: f"c{a['c']} gives"),
            ),
            (always(one_holder),),
            {"client": range(2)},
            aux,
        )

    res = check(lock((always(held_by_owner),)))
    assert res.ok and res.explored.states == 3
    bare = prove(lock(()))
    cti = bare.ctis["one_holder"]
    assert cti["action"] == "take" and cti["post"]["held[0]"] == cti["post"]["held[1]"] == "1"
