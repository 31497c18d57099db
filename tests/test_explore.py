"""The explorer's own machinery: deadlock detection, the symmetry key, parallel runs, bounds."""

import io
import json
import re

import pytest

import mcp_inflight.model.session_spec as session_spec
import mcp_inflight.proofs.native_build as native_build
import mcp_inflight.proofs.progress as progress_mod
from mcp_inflight.model import DESIGNS, Config, Life, profiles
from mcp_inflight.model.config import REMOVAL_SITES
from mcp_inflight.model.session import actions_for
from mcp_inflight.proofs.explorer import explore, search_sessions
from support.explored import expanded, reachable_graph
from support.explored import run as explored_run

# --- deadlocks -------------------------------------------------------------------------------


@pytest.fixture
def without_respond(monkeypatch):
    """The model with ``respond``, ``emit`` and the session's end taken out of every action
    set: an admitted request whose cancel was already spent (it arrived before the admission and
    found nothing) has nothing left to do, yet it is unfinished -- a deadlock."""

    def reduced(cfg):
        gone = ("respond", "emit", "end_session")
        return tuple(a for a in actions_for(cfg) if a.name not in gone)

    monkeypatch.setattr(session_spec, "actions_for", reduced)


@pytest.mark.parametrize("engine", ["compiled", "interpreted", "native"])
def test_deadlock_is_reported_with_a_trace(without_respond, engine):
    if engine == "native" and not native_build.available():
        pytest.skip("no C compiler")
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "stdio", ids=1, requests=1)
    r = explore(cfg, progress=False, engine=engine)
    assert r.deadlocks > 0
    t = r.deadlock_trace
    assert t, "a deadlock comes with the shortest trace to it"
    acts = [s["action"] for s in t]
    assert acts[0] == "client_sends"
    assert acts[-1] == "admit"
    assert "deliver_cancel" in acts and acts.index("deliver_cancel") < acts.index("admit")
    assert t[-1]["changes"]["life[A]"] == ["received", "in_flight"]
    assert "respond" not in r.coverage


def test_no_deadlock_on_the_full_model():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "stdio", ids=1, requests=1)
    r = explore(cfg, progress=False)
    assert r.deadlocks == 0 and r.deadlock_trace is None


# --- the states the tests share ---------------------------------------------------------------


@pytest.mark.parametrize("symmetry", [False, True])
def test_expanded_states_are_the_explorers(symmetry):
    """The search the tests share (``support.explored.expanded``) meets as many states as a run
    of the one explorer counts, each once; unreduced, they are the reachable graph's states."""
    cfg = Config(DESIGNS["unguarded"], "2026-07-28", "http", ids=1, requests=2)
    res = explore(cfg, symmetry=symmetry, progress=False)
    states = expanded(cfg, symmetry)
    assert len(states) == len(set(states)) == res.states > 1000
    assert res.symmetry == symmetry
    if not symmetry:
        assert set(states) == reachable_graph(cfg)[0]


def test_search_sessions_matches_one_run_after_another():
    cfgs = [
        Config(DESIGNS[d], rev, tr, ids=2, requests=2)
        for d in ("atomic", "unguarded")
        for rev, tr in profiles()
        if rev == "2026-07-28"
    ]
    seq = [explore(c, progress=False, liveness=True).to_json() for c in cfgs]
    par = [r.to_json() for r in search_sessions(cfgs, jobs=2, progress=False)]
    for a, b in zip(seq, par, strict=False):
        a.pop("seconds")
        b.pop("seconds")
    assert par == seq


def test_max_states_stops_the_run_and_says_so():
    cfg = Config(DESIGNS["atomic"], "2025-11-25", "http", ids=2, requests=2)
    r = explore(cfg, max_states=500, progress=False)
    assert not r.complete and not r.ok
    assert r.states == 500


def test_traces_replay_on_the_model():
    """Every step of a reported trace is an enabled move of the model from the previous state
    (traces are rebuilt by replaying stored moves).  The run is the shared one on the engine
    ``check`` uses, native where a compiler is."""
    r = explored_run("unguarded", "2025-11-25", "http", ids=2, requests=2)
    assert r.cfg == Config(DESIGNS["unguarded"], "2025-11-25", "http", ids=2, requests=2)
    traces = [v.trace for v in r.verdicts if v.trace]
    assert traces
    for t in traces:
        for a, b in zip(t, t[1:], strict=False):
            for name, (_, after) in a["changes"].items():
                if name in b["changes"]:
                    assert b["changes"][name][0] == after


#: Where each mutant of atomic has exactly atomic's reachable graph (every state, move and
#: output; 2 ids x 2 instances on 2026-07-28, 1 id x 2 on 2025-11-25, no symmetry reduction):
#: the README calls a mutant equivalent on a profile only where this holds.
SAME_GRAPH = {
    # on 2026-07-28 http a POST is a scope of its own: nothing to claim, refuse or look up by id
    "atomic-split-claim": set(),
    "atomic-no-refusal": {("2026-07-28", "http")},
    "atomic-free-on-cancel": {("2026-07-28", "http")},
    "atomic-unguarded-write": {("2026-07-28", "http")},
    "atomic-cancel-by-id": set(profiles()),
    # channel order is stdio's: http has none to keep
    "atomic-cancels-out-of-order": {("2025-11-25", "http"), ("2026-07-28", "http")},
    **{f"atomic-unguarded-{site}": set(profiles()) for site in REMOVAL_SITES},
    # server-to-client requests exist on 2025-11-25 only
    **{
        name: {("2026-07-28", "stdio"), ("2026-07-28", "http")}
        for name in (
            "atomic-reused-server-ids",
            "atomic-guessable-server-ids",
            "atomic-keeps-answered-waiter",
            "atomic-leaks-waiters",
        )
    },
    "atomic-writes-after-end": set(),
    # the scope per POST is a knob of 2026-07-28 http alone
    "atomic-shared-registry": {
        ("2025-11-25", "stdio"),
        ("2025-11-25", "http"),
        ("2026-07-28", "stdio"),
    },
}


@pytest.mark.parametrize(
    "rev,tr",
    [pytest.param(*p, marks=pytest.mark.slow) if p[0] == "2025-11-25" else p for p in profiles()],
)
def test_equivalent_mutants_have_atomic_reachable_graph(rev, tr):
    from mcp_inflight.model.config import ATOMIC, mutants

    assert set(SAME_GRAPH) == set(mutants())
    # 2025-11-25 at one id: its graphs without symmetry are an order of magnitude larger since
    # server-to-client requests and the session's end are modelled
    ids = 1 if rev == "2025-11-25" else 2
    base = reachable_graph(Config(ATOMIC, rev, tr, ids=ids))
    for name, d in mutants().items():
        same = reachable_graph(Config(d, rev, tr, ids=ids)) == base
        assert same == ((rev, tr) in SAME_GRAPH[name]), (name, rev, tr)


def test_unguarded_write_writes_for_a_cancelled_handler():
    # what tells atomic-unguarded-write apart where its graph differs: a cancelled handler that
    # still runs has its progress and elicitation written (atomic drops them: only a live
    # request's own open stream is written on); no invariant forbids that
    from mcp_inflight.model.config import ATOMIC, mutants

    def written_after_cancel(cfg):
        return {
            name
            for pre, name, (r, _), outs, _ in reachable_graph(cfg)[1]
            if name in ("emit", "server_request")
            and any(written for _, (_, written) in outs)
            and Life(pre.life[r]) == Life.CANCELLED
        }

    mut = mutants()["atomic-unguarded-write"]
    assert written_after_cancel(Config(mut, "2025-11-25", "stdio", ids=1)) == {
        "emit",
        "server_request",
    }
    assert written_after_cancel(Config(mut, "2026-07-28", "stdio", ids=1)) == {"emit"}
    for rev in ("2025-11-25", "2026-07-28"):
        assert written_after_cancel(Config(ATOMIC, rev, "stdio", ids=1)) == set()


# --- progress ----------------------------------------------------------------------------------

_PROGRESS_CFG = Config(DESIGNS["atomic"], "2025-11-25", "stdio", ids=1, requests=2)
_LABEL = session_spec.spec(_PROGRESS_CFG).label()  # session atomic (2025-11-25 stdio, 1 ids, ...
_FIELDS_RE = re.compile(
    "^  " + re.escape(_LABEL) + r": [\d,]+ states, [\d,]+ states/s, depth \d+, "
    r"queue [\d,]+, left (\?|~[\d,]+ states(, ~[\d,]+s)? \(est\.\))$"
)


@pytest.fixture
def every_tick(monkeypatch):
    """Snapshots on every tick of the search loop (no time throttle), so tests need no timing."""
    monkeypatch.setattr(progress_mod, "TICK_INTERVAL", 0.0)


@pytest.mark.parametrize("engine", ["compiled", "interpreted", "native"])
def test_progress_lines_carry_the_fields(every_tick, engine, capsys):
    if engine == "native" and not native_build.available():
        pytest.skip("no C compiler")
    err = io.StringIO()
    r = explore(
        _PROGRESS_CFG,
        symmetry=False,
        engine=engine,
        progress=progress_mod.Display(err, live=False, interval=0.0),
    )
    lines = err.getvalue().splitlines()
    running = [x for x in lines if not x.startswith("  done ")]
    assert running, "a run of some thousand states reports while it runs"
    for x in running:
        assert _FIELDS_RE.match(x), x
    states = [int(x.split(": ")[1].split(" states")[0].replace(",", "")) for x in running]
    assert states == sorted(states) and states[-1] <= r.states
    assert lines[-1] == (
        f"  done {_LABEL}: {r.states:,} states, {r.transitions:,} "
        f"transitions, depth {r.depth}, {lines[-1].split(', ')[-1].split('s (')[0]}s "
        f"({lines[-1].split('(')[-1]}"
    )
    assert capsys.readouterr().out == ""  # nothing on stdout


def test_plain_progress_lines_come_at_the_interval(every_tick):
    """Not a terminal: a plain line only when ``interval`` has passed since the last one; with
    an interval longer than the run, only the summary."""
    quiet, chatty = io.StringIO(), io.StringIO()
    explore(_PROGRESS_CFG, symmetry=False, progress=progress_mod.Display(quiet, live=False))
    explore(
        _PROGRESS_CFG,
        symmetry=False,
        progress=progress_mod.Display(chatty, live=False, interval=0.0),
    )
    assert quiet.getvalue().count("\n") == 1 and quiet.getvalue().startswith("  done ")
    assert chatty.getvalue().count("\n") > 1
    assert "\r" not in chatty.getvalue()


def test_live_progress_rewrites_one_line(every_tick):
    err = io.StringIO()
    explore(
        _PROGRESS_CFG, symmetry=False, progress=progress_mod.Display(err, live=True, interval=0.0)
    )
    text = err.getvalue()
    assert text.count("\r") >= 2 and text.count("\n") == 1  # redrawn; one summary line


def test_estimate_left_only_from_shrinking_levels():
    assert progress_mod.estimate_left([1, 4, 9], 0) is None  # growing: no basis
    assert progress_mod.estimate_left([1, 8, 4], 0) is None  # one shrink: still none
    # 16 > 8 > 4: ratio 1/2, so 4 * (1/2) / (1/2) = 4 more, less 1 found already
    assert progress_mod.estimate_left([1, 16, 8, 4], 1) == 3


def test_worker_runs_report_progress_to_the_parent_while_running(every_tick):
    err = io.StringIO()
    cfgs = [_PROGRESS_CFG, Config(DESIGNS["unguarded"], "2025-11-25", "stdio", 1, 2)]
    rs = search_sessions(
        cfgs, jobs=2, symmetry=False, progress=progress_mod.Display(err, live=False, interval=0)
    )
    lines = err.getvalue().splitlines()
    for r in rs:
        name = session_spec.spec(r.cfg).label() + ": "
        mine = [x for x in lines if name in x]
        assert any(not x.startswith("  done ") for x in mine), "progress before the end"
        assert mine[-1].startswith("  done " + name) and f"{r.states:,} states" in mine[-1]


def test_check_json_stdout_is_unchanged_by_progress(capsys):
    from mcp_inflight import cli

    # every model (their progress lines too), without the sensitivity check, which reports none
    argv = ["check", "--revision", "2026-07-28", "--transport", "stdio", "--requests", "2"]
    argv += ["--no-prove", "--no-sensitivity", "--json"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] is True  # stdout is the JSON object alone
    assert "  done session atomic (2026-07-28 stdio, 2 ids, 2 requests): " in err
    assert cli.main(argv + ["--no-progress"]) == 0
    out2, err2 = capsys.readouterr()
    strip = lambda o: [
        {k: v for k, v in r.items() if k != "seconds"} for r in json.loads(o)["runs"]
    ]  # noqa: E731
    assert strip(out2) == strip(out) and err2 == ""


def test_check_engines_give_the_same_json(monkeypatch, capsys):
    from mcp_inflight import cli

    # --engine chooses the session's engine: its runs alone are compared
    argv = ["check", "--model", "session", "--revision", "2026-07-28", "--requests", "2"]
    argv += ["--no-prove", "--no-sensitivity", "--json"]
    outs = []
    for engine in ("compiled", "native") if native_build.available() else ("compiled",):
        assert cli.main(argv + ["--engine", engine, "--no-progress"]) == 0
        runs = json.loads(capsys.readouterr().out)["runs"]
        # liveness too: both engines keep the same graph and judge it the same way
        assert all(r["liveness"] for r in runs)
        outs.append([{k: v for k, v in r.items() if k != "seconds"} for r in runs])
    assert all(o == outs[0] for o in outs)
    monkeypatch.setattr(native_build, "available", lambda: False)
    assert cli.main(argv + ["--engine", "native"]) == 2
    assert "needs a C compiler" in capsys.readouterr().err


# --- progress of the one explorer (the declared models) -------------------------------------


class _Kept:
    def __init__(self) -> None:
        self.snaps: list = []

    def update(self, snap) -> None:
        self.snaps.append(snap)


def test_the_one_explorer_reports_its_progress_and_a_patient_sink_keeps_short_runs_quiet():
    from mcp_inflight.model import tasks as T
    from mcp_inflight.proofs import explored, explorer
    from mcp_inflight.proofs.progress import Patient

    def final_is_the_run(kept, ex):
        final = [s for s in kept.snaps if s.final]
        assert len(final) == 1 and final[0].states == ex.states
        assert final[0].transitions == ex.transitions and final[0].complete

    # the whole model on the engine check runs it on (native where a compiler is); the runs
    # below, on one request, take the default engine (compiled)
    kept = _Kept()
    final_is_the_run(kept, explorer.explore(T.spec("fresh-bound"), progress=kept, engine="fastest"))
    quiet = _Kept()
    explorer.explore(T.spec("fresh-bound", requests=1), progress=Patient(quiet, after=60.0))
    assert quiet.snaps == []
    # a run not given a sink reports to the process's default one (check's declared models)
    default = _Kept()
    explored.progress_to(default)
    try:
        ex = explorer.explore(T.spec("fresh-bound", requests=1))
    finally:
        explored.progress_to(None)
    assert [s.final for s in default.snaps][-1:] == [True]
    final_is_the_run(default, ex)
