"""The explorer's own machinery: deadlock detection, the symmetry key, parallel runs, bounds."""

import io
import itertools
import json
import re

import pytest

import mcp_inflight.proofs.compiled_model as compiled_model
import mcp_inflight.proofs.flat as flat
import mcp_inflight.proofs.native_build as native_build
import mcp_inflight.proofs.progress as progress_mod
import mcp_inflight.proofs.session_search as explore_mod
from mcp_inflight.model import DESIGNS, Config, Life, profiles, step
from mcp_inflight.model.config import REMOVAL_SITES
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import FIELDS, Field
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.flat import Layout, key_function
from mcp_inflight.proofs.session_search import Canonicalizer, search_many
from support.explored import expanded, expanded_flat
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

    monkeypatch.setattr(compiled_model, "actions_for", reduced)
    monkeypatch.setattr(explore_mod, "actions_for", reduced)
    monkeypatch.setattr(step, "actions_for", reduced)
    step.moves.cache_clear()
    yield
    step.moves.cache_clear()


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_deadlock_is_reported_with_a_trace(without_respond, engine):
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


# --- the symmetry key --------------------------------------------------------------------------


def relabel(s, sigma, pi):
    """``s`` with instance r renamed sigma[r] and id k renamed pi[k], field by field from
    FIELDS (an unsent instance's id is a placeholder and keeps its value)."""
    vals = []
    n = len(sigma)
    sent = [s.life[r] != Life.UNSENT for r in range(n)]
    for f in FIELDS:
        v = getattr(s, f.name)

        def val(x, r=None, f=f):
            if f.sort == "inst?":
                return NONE if x == NONE else sigma[x]
            if f.sort == "id" and (r is None or sent[r]):
                return pi[x]
            return x

        if f.key == "inst":
            new = [None] * n
            for r in range(n):
                new[sigma[r]] = val(v[r], r)
        elif f.key == "id":
            new = [None] * len(pi)
            for k in range(len(pi)):
                new[pi[k]] = val(v[k])
        else:
            vals.append(val(v))
            continue
        vals.append(tuple(new))
    return type(s)(*vals)


def renamings(cfg, s):
    """Every renaming of ``s``, over every instance and id permutation."""
    return [
        relabel(s, sg, pi)
        for sg in itertools.permutations(range(cfg.requests))
        for pi in itertools.permutations(range(cfg.ids))
    ]


def brute_orbit(cfg, s):
    """The least renaming of ``s`` (the orbit's name)."""
    return min(renamings(cfg, s))


def orbit_namer(cfg):
    """``brute_orbit`` over many states: a state's renamings all get the orbit's name at once, so
    each orbit is computed once, not once per member."""
    names: dict = {}

    def name(s):
        o = names.get(s)
        if o is None:
            members = renamings(cfg, s)
            o = min(members)
            names.update(dict.fromkeys(members, o))
        return o

    return name


def reachable_flat(cfg):
    """Every reachable state of ``cfg`` without symmetry, as flat tuples in the order a
    breadth-first search meets them (the explorer's successor function)."""
    return list(expanded_flat(cfg, symmetry=False))


def reachable(cfg):
    return list(expanded(cfg, symmetry=False))


@pytest.mark.parametrize("symmetry", [False, True])
def test_expanded_states_are_the_explorers(symmetry):
    """The search the tests share (``support.explored.expanded``) meets exactly the states a run
    of the explorer counts and expands, each once."""
    cfg = Config(DESIGNS["unguarded"], "2026-07-28", "http", ids=1, requests=2)
    pre, post = set(), set()

    def on_edge(a, action, args, b, out):
        pre.add(a)
        post.add(b)

    res = explore(cfg, symmetry=symmetry, progress=False, on_edge=on_edge)
    states = expanded(cfg, symmetry)
    assert len(states) == len(set(states)) == res.states > 1000
    assert pre <= set(states) <= pre | post | {states[0]}
    if not symmetry:
        assert set(states) == post | {states[0]}


KEY_CASES = [
    ("unguarded", "2026-07-28", "stdio", 2, 2),
    ("check_then_claim", "2026-07-28", "http", 2, 2),
    ("atomic", "2025-11-25", "stdio", 1, 2),
    pytest.param("atomic", "2025-11-25", "stdio", 2, 2, marks=pytest.mark.slow),
    pytest.param("unguarded", "2026-07-28", "http", 3, 2, marks=pytest.mark.slow),
    pytest.param("atomic", "2026-07-28", "stdio", 1, 3, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("design,revision,transport,ids,requests", KEY_CASES)
def test_symmetry_key_names_exactly_the_orbit(design, revision, transport, ids, requests):
    """key(s1) == key(s2) only when s1 and s2 are renamings of each other, on every reachable
    state (sound); where the server mints no ids (2026-07-28) also the converse, so the reduced
    run has one state per orbit (exact).  On 2025-11-25 the server's ids share the id sort and
    the key orders ids by the clients' instances alone, so an orbit may get more than one key
    (``proofs/flat.py``): fewer states than without symmetry, more than orbits."""
    cfg = Config(DESIGNS[design], revision, transport, ids=ids, requests=requests)
    lay = Layout(cfg)
    key = key_function(cfg, lay, True)
    flat_states = reachable_flat(cfg)
    by_orbit, by_key = {}, {}
    exact = not cfg.rev2025
    orbit = orbit_namer(cfg)
    for t in flat_states:
        s = lay.unflatten(t)
        k = key(t)
        o = orbit(s)
        keys = by_orbit.setdefault(o, set())
        keys.add(k)
        assert len(keys) == 1 or not exact, "one orbit, two keys (not exact)"
        assert by_key.setdefault(k, o) == o, "one key, two orbits (unsound)"
    reduced = explore(cfg, progress=False, engine="compiled").states  # the session's key
    assert len(by_orbit) <= reduced <= len(by_key) and reduced < len(flat_states)
    if exact:
        assert reduced == len(by_orbit)


def _alternatives(f, cfg, x):
    dom = {
        "life": list(Life),
        "id": range(cfg.ids),
        "inst?": range(-1, cfg.requests),
        "bool": (False, True),
        "step": range(3),
        "sreq": range(4),
        "cmsg": range(3),
        "time": range(3),
    }[f.sort]
    return [int(v) for v in dom if v != x][:2]


def test_every_field_takes_part_in_the_symmetry_key():
    """Change any one slot of a state: the key changes unless the result is a renaming of the
    state.  A field left out of the key would give two orbits one key."""
    # 2026-07-28: the key is exact there (every field is in the state, the server's at defaults)
    cfg = Config(DESIGNS["unguarded"], "2026-07-28", "stdio", ids=2, requests=2)
    lay = Layout(cfg)
    key = key_function(cfg, lay, True)
    checked = set()
    for s in reachable(cfg)[::150]:
        k0, o0 = key(lay.flatten(s)), brute_orbit(cfg, s)
        for f in FIELDS:
            n = lay.size[f.name]
            for slot in range(n):
                cur = getattr(s, f.name) if f.key is None else getattr(s, f.name)[slot]
                for alt in _alternatives(f, cfg, cur):
                    if f.key is None:
                        t = s._replace(**{f.name: alt})
                    else:
                        v = list(getattr(s, f.name))
                        v[slot] = alt
                        t = s._replace(**{f.name: tuple(v)})
                    same_orbit = brute_orbit(cfg, t) == o0
                    assert (key(lay.flatten(t)) == k0) == same_orbit, (f.name, slot, alt)
                    checked.add(f.name)
    assert checked == {f.name for f in FIELDS}


def test_a_new_per_instance_field_enters_the_key_without_edits(monkeypatch):
    extra = Field("extra", "inst", "bool", False, False, False, "a field the key was not told of")
    monkeypatch.setattr(flat, "FIELDS", FIELDS + (extra,))
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", ids=1, requests=2)
    lay = Layout(cfg)
    key = key_function(cfg, lay, True)
    base = [0] * lay.width
    for k in range(cfg.ids):
        base[lay.pos("inflight", k)] = NONE
        base[lay.pos("stream", k)] = NONE
    flipped = list(base)
    flipped[lay.pos("extra", 0)] = 1
    assert key(tuple(base)) != key(tuple(flipped))


@pytest.mark.parametrize(
    "field",
    [
        Field("peer", "inst", "inst?", False, False, -1, "names another instance"),
        Field("other_id", "inst", "id", False, False, 0, "an id besides rid"),
        Field("last", None, "inst?", False, False, -1, "a scalar naming an instance"),
    ],
)
def test_the_key_refuses_fields_it_cannot_rename(monkeypatch, field):
    monkeypatch.setattr(flat, "FIELDS", FIELDS + (field,))
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", ids=2, requests=2)
    with pytest.raises(NotImplementedError, match=field.name):
        key_function(cfg, Layout(cfg), True)


def test_canonicalizer_returns_a_renaming_in_the_same_orbit():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "stdio", ids=2, requests=2)
    c = Canonicalizer(cfg)
    for s in reachable(cfg)[::10]:
        k = c.key(s)
        assert brute_orbit(cfg, k) == brute_orbit(cfg, s)
        assert c.key(k) == k


# --- runs --------------------------------------------------------------------------------------


def test_search_many_matches_one_run_after_another():
    cfgs = [
        Config(DESIGNS[d], rev, tr, ids=2, requests=2)
        for d in ("atomic", "unguarded")
        for rev, tr in profiles()
        if rev == "2026-07-28"
    ]
    seq = [explore(c, progress=False, engine="compiled").to_json() for c in cfgs]
    par = [r.to_json() for r in search_many(cfgs, jobs=2, progress=False)]
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
    ``check`` uses, native where a compiler is; ``tests/test_native.py`` holds its traces equal
    to the Python engine's."""
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
    from mcp_inflight.proofs.session_search import reachable_graph

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
    from mcp_inflight.proofs.session_search import reachable_graph

    def written_after_cancel(cfg):
        lay = compiled_model.Compiled(cfg, ()).layout
        return {
            name
            for pre, name, (r, _), outs, _ in reachable_graph(cfg)[1]
            if name in ("emit", "server_request")
            and outs[1]
            and Life(lay.unflatten(pre).life[r]) == Life.CANCELLED
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
_FIELDS_RE = re.compile(
    r"^  atomic 2025-11-25 stdio 1x2: [\d,]+ states, [\d,]+ states/s, depth \d+, "
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
        f"  done atomic 2025-11-25 stdio 1x2: {r.states:,} states, {r.transitions:,} "
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
    rs = search_many(
        cfgs, jobs=2, symmetry=False, progress=progress_mod.Display(err, live=False, interval=0)
    )
    lines = err.getvalue().splitlines()
    for r in rs:
        name = f"{r.cfg.label} 1x2: "
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
