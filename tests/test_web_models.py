"""The models page's JSON API (the declared models: lease, rounds, resume, tasks,
subscriptions), over real HTTP on loopback, served by ``mcp-inflight explore``.

What the server says is checked against the one checker itself: the moves it offers at a state
are the explorer's transitions out of that state, with the same successors and outputs; the
verdicts and traces it serves are those of ``explore``, and each trace replays through the
page's own stepping to the state where its property fails.
"""

from __future__ import annotations

import importlib
import json
import random
import re
import subprocess
import sys
import time

import pytest
from test_web import get, start_server, stop_server, token

from mcp_inflight.model.declare import describe
from mcp_inflight.proofs.declared import explore, transitions

MODELS = ["lease", "rounds", "resume", "tasks", "subscriptions"]
#: bounds at which each model's whole space is walked here in well under a second
SMALL = {"lease": {}, "rounds": {}, "resume": {}, "tasks": {"requests": 1}, "subscriptions": {}}
#: the state limit of the test server: every run below fits, tasks at its default bounds not
LIMIT = 6000


def module(name: str):
    return importlib.import_module(f"mcp_inflight.model.{name}")


@pytest.fixture(scope="module")
def base():
    # the session model's configuration, explored as the server starts, at its smallest: no
    # test here reads the session page's traces
    proc, url = start_server("--max-states", str(LIMIT), "--ids", "1", "--requests", "1")
    yield url
    stop_server(proc)


def models_view(base: str, **query) -> dict:
    status, body = get(base, "/api/models/view", **query)
    assert status == 200, body
    return body


def explored(base: str, **query) -> dict:
    deadline = time.monotonic() + 120
    while True:
        status, body = get(base, "/api/models/explore", **query)
        assert status == 200, body
        if body["status"] not in ("queued", "exploring") or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def tok(m) -> str:
    return ".".join([m.name, *(str(v) for _, v in m.args)])


def space(sp):
    """The explorer's transitions: per state, ``{token: (post, output)}``, and a shortest path
    of tokens to each state (breadth first, as the transitions come)."""
    out: dict = {}
    paths = {sp.initial(): []}
    b = sp.logic()
    for pre, m, post in transitions(sp):
        out.setdefault(pre, {})[tok(m)] = (post, m.act.outputs(b, pre, **m.kw))
        if post not in paths:
            paths[post] = [*paths[pre], tok(m)]
    return out, paths


def disagreements(sp, v: dict, s, out: dict) -> list[str]:
    """Where the view ``v`` of state ``s`` differs from the explorer's transitions ``out``."""
    bad = []
    if {f["name"]: f["value"] for f in v["state"]} != describe(sp, s):
        bad.append("the state differs")
    want = out.get(s, {})
    got = {r["token"]: r for r in v["enabled"]}
    for t in sorted(want.keys() - got.keys()):
        bad.append(f"{t} is enabled but not offered")
    for t in sorted(got.keys() - want.keys()):
        bad.append(f"{t} is offered but not enabled")
    for t in sorted(want.keys() & got.keys()):
        post, output = want[t]
        if got[t]["post"] != describe(sp, post):
            bad.append(f"{t} leads elsewhere")
        if got[t]["output"] != json.loads(json.dumps(dict(output), default=str)):
            bad.append(f"{t} tells another output")
    return bad


def test_every_declared_model_is_listed_with_its_designs_and_bounds(base):
    status, body = get(base, "/api/models")
    assert status == 200
    assert [m["name"] for m in body["models"]] == MODELS
    for m in body["models"]:
        mod = module(m["name"])
        assert [d["name"] for d in m["designs"]] == list(mod.DESIGNS)
        assert [d["safe"] for d in m["designs"]] == [True] + [False] * (len(mod.DESIGNS) - 1)
        assert {b["name"]: b["default"] for b in m["bounds"]} == {
            k: v[0] for k, v in mod.BOUNDS.items()
        }
        assert [h["name"] for h in m["hazards"]] == [h.name for h in mod.HAZARDS]
    assert body["default"] is None  # the session page is the default


@pytest.mark.parametrize("name", MODELS)
def test_the_moves_offered_are_the_explorers_transitions(base, name):
    mod = module(name)
    design = list(mod.DESIGNS)[1]  # a mutant: its space differs from the safe design's
    sp = mod.spec(design, **SMALL[name])
    out, paths = space(sp)
    rng = random.Random(name)
    states = list(paths)
    picked = [sp.initial(), *rng.sample(states, min(12, len(states)))]
    # a dead end too, where the model has one
    picked += [s for s in states if s not in out][:1]
    for s in picked:
        v = models_view(base, model=name, design=design, path="-".join(paths[s]), **SMALL[name])
        assert v["at"] == len(paths[s])
        assert disagreements(sp, v, s, out) == []


def test_every_state_of_a_small_model_agrees(base):
    """Subscriptions at its default bounds: every reachable state, through the API."""
    sp = module("subscriptions").spec("by-listen-id")
    out, paths = space(sp)
    assert len(paths) > 100
    for s, path in paths.items():
        v = models_view(base, model="subscriptions", design="by-listen-id", path="-".join(path))
        assert disagreements(sp, v, s, out) == []


def test_the_agreement_check_catches_a_wrong_step(monkeypatch):
    """The comparison above fails on a view whose stepping is wrong: one action's guard
    ignored (so it is offered where it is not enabled), or one action's effect dropped."""
    from mcp_inflight.web import declared_api

    sp = module("subscriptions").spec("graceful-response")
    out, _ = space(sp)
    q = {"model": "subscriptions", "design": "graceful-response"}
    assert disagreements(sp, declared_api.view(q), sp.initial(), out) == []
    real_take = declared_api.take

    def guard_ignored(spec, s, m, b):
        got = real_take(spec, s, m, b)
        if got is None and m.name == "notify":
            return spec.post(s, m.act.effect(b, s, **m.kw)), {}
        return got

    monkeypatch.setattr(declared_api, "take", guard_ignored)
    bad = disagreements(sp, declared_api.view(q), sp.initial(), out)
    assert any("offered but not enabled" in x for x in bad), bad

    def effect_dropped(spec, s, m, b):
        got = real_take(spec, s, m, b)
        return None if got is None else (s if m.name == "listen" else got[0], got[1])

    monkeypatch.setattr(declared_api, "take", effect_dropped)
    bad = disagreements(sp, declared_api.view(q), sp.initial(), out)
    assert any("leads elsewhere" in x for x in bad), bad


def test_ghost_fields_are_marked_and_changes_shown(base):
    v = models_view(base, model="subscriptions")
    ghosts = {f["var"] for f in v["state"] if f["ghost"]}
    sp = module("subscriptions").spec("graceful-response")
    assert ghosts == {x.name for x in sp.vars if x.ghost} and ghosts
    assert not any(f["changed"] for f in v["state"])
    first = v["enabled"][0]
    w = models_view(base, model="subscriptions", path=first["token"])
    assert {f["name"] for f in w["state"] if f["changed"]} == set(first["changes"])
    assert w["story"] == first["story"]


@pytest.mark.parametrize(
    ("name", "design", "bounds"),
    [
        ("lease", "unfenced", {}),
        ("lease", "check-then-set", {"workers": 2, "failover": 0}),
        ("lease", "fenced", {"workers": 1, "failover": 1}),  # the failover hazard's run
        ("rounds", "unsigned", {}),
        ("resume", "request-id-streams", {"sessions": 1}),
        ("tasks", "cancel-reaches-task", {"requests": 1}),
        ("tasks", "unbounded-ttl", {"requests": 1}),  # a liveness property
        ("subscriptions", "by-listen-id", {}),
    ],
)
def test_a_mutants_traces_are_the_explorers_and_replay(base, name, design, bounds):
    mod = module(name)
    res = explore(mod.spec(design, **bounds))
    body = explored(base, model=name, design=design, **bounds)
    assert body["status"] == "done" and body["complete"], body
    assert body["states"] == res.states
    assert {k: p["verdict"] for k, p in body["properties"].items()} == {
        p.name: res.verdicts[p.name] for p in res.spec.props
    }
    assert body["broken"] == res.broken() and body["broken"]
    assert body["coverage"] == res.coverage
    for prop in body["broken"]:
        served = body["properties"][prop]
        assert [s["story"] for s in served["trace"]] == [s["story"] for s in res.traces[prop]]
        v = models_view(base, model=name, design=design, path="-".join(served["path"]), **bounds)
        assert len(v["path"]) == len(served["trace"]) + len(served.get("loop", []))
        if served["kind"] == "liveness":  # the path walks the lasso: the trace, the loop once
            assert served["loop"] == res.loops[prop] and served["loop_from"] == len(
                res.traces[prop]
            )
            assert [s["story"] for s in served["loop"]] == [
                s["story"] for s in v["path"][served["loop_from"] :]
            ]
            start = models_view(
                base,
                model=name,
                design=design,
                path="-".join(served["path"]),
                at=str(served["loop_from"]),
                **bounds,
            )

            def values(view: dict) -> dict:
                return {f["name"]: f["value"] for f in view["state"]}

            assert values(start) == values(v)  # once round, the loop is back where it started
        status = {p["name"]: p["status"] for p in v["properties"]}
        assert status[prop] in ("fails", "goal not yet"), (prop, status[prop])
        if status[prop] == "fails":
            assert prop in v["path"][-1]["breaks"]
        # one step short of the end, an invariant still held
        if served["kind"] == "always":
            u = models_view(
                base, model=name, design=design, path="-".join(served["path"][:-1]), **bounds
            )
            assert {p["name"]: p["status"] for p in u["properties"]}[prop] == "holds"


def test_a_safe_design_holds_and_every_action_fires(base):
    body = explored(base, model="subscriptions")
    assert body["status"] == "done" and body["ok"] and body["broken"] == []
    assert body["dead_actions"] == [] and all(n > 0 for n in body["coverage"].values())
    assert body["config"]["design"] == "graceful-response"


def test_a_dead_action_is_reported(base):
    # rounds' stateless design never completes a call: its `complete` action never fires
    body = explored(base, model="rounds", design="stateless")
    assert body["dead_actions"] == ["complete"] and body["coverage"]["complete"] == 0


def test_the_exploration_stops_at_the_state_limit(base):
    body = explored(base, model="tasks")
    assert body["status"] == "done"
    assert not body["complete"] and not body["ok"]
    assert any(f"more than {LIMIT} states" in e for e in body["errors"])


def test_a_position_on_a_path(base):
    sp = module("rounds").spec("unsigned")
    _, paths = space(sp)
    path = max(paths.values(), key=len)[:5]
    assert len(path) == 5
    v = models_view(base, model="rounds", design="unsigned", path="-".join(path), at=2)
    assert v["at"] == 2 and len(v["path"]) == 5
    assert [r["token"] for r in v["enabled"] if r["next"]] == [path[2]]
    assert v["story"] == v["path"][1]["story"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"model": "session"}, "no model 'session'"),
        ({"model": "lease", "design": "nope"}, "lease has no design 'nope'"),
        ({"model": "lease", "workers": "two"}, "workers must be a whole number"),
        ({"model": "lease", "workers": "0"}, "workers must be between 1 and 8"),
        ({"model": "lease", "workers": "99"}, "workers must be between 1 and 8"),
        ({"model": "lease", "failover": "2"}, "failover must be between 0 and 1"),
        ({"model": "rounds", "path": "fly.0"}, "step 1: 'fly.0' is no move of rounds"),
        ({"model": "rounds", "path": "../etc"}, "step 1: '../etc' is no move"),
        ({"model": "rounds", "at": "3"}, "at must be between 0 and 0"),
        ({"model": "rounds", "at": "x"}, "at must be a whole number"),
        ({"model": "rounds", "path": "-".join(["x"] * 401)}, "at most 400 steps"),
    ],
)
def test_bad_queries_are_400_with_the_reason(base, query, message):
    for route in ("/api/models/view", "/api/models/explore"):
        if route.endswith("explore") and ("path" in query or "at" in query):
            continue
        status, body = get(base, route, **query)
        assert status == 400, (route, body)
        assert message in body["error"], body


def test_a_move_not_enabled_names_its_step(base):
    v = models_view(base, model="subscriptions")
    first = v["enabled"][0]["token"]
    # the same listen twice: the second is not enabled where the first was taken
    status, body = get(base, "/api/models/view", model="subscriptions", path=f"{first}-{first}")
    assert status == 400 and body["step"] == 2
    assert body["error"] == f"step 2: {first} is not enabled there"


def test_garbage_is_never_a_500(base):
    rng = random.Random(7)
    junk = ["", "-", "--", "%00", "\u00e9", "1e9", "-1", "0x1", "listen", "listen.", "a" * 300]
    keys = ["model", "design", "path", "at", "listens", "ids", "workers", "failover"]
    for _ in range(60):
        q = {k: rng.choice(junk) for k in rng.sample(keys, 3)}
        q.setdefault("model", rng.choice([*MODELS, "x"]))
        for route in ("/api/models/view", "/api/models/explore"):
            status, body = get(base, route, **q)
            assert status in (200, 400), (route, q, status, body)
            if status == 400:
                assert body["error"]


def test_explore_needs_the_pages_token(base):
    import urllib.error
    import urllib.request

    req = urllib.request.Request(base + "api/models/explore?model=rounds")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 403
    assert token(base)


def test_the_page_and_its_link_from_the_index(base):
    status, page = get(base, "/models")
    assert status == 200 and "/static/models.js" in page
    assert page.index('<script src="/static/dom.js">') < page.index('src="/static/models.js"')
    assert re.search(r'name="explore-token" content="[^"]+"', page)
    status, script = get(base, "/static/models.js")
    assert status == 200 and "/api/models/view" in script
    status, index = get(base, "/")
    assert status == 200 and 'href="/models"' in index


def test_explore_model_option_opens_the_page_on_that_model():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_inflight",
            "explore",
            "--port",
            "0",
            "--model",
            "lease",
            "--design",
            "unfenced",
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+/)", lines[0])
        assert m, lines
        url = m.group(1)
        assert lines[1].strip().endswith(f"{url}models?model=lease&design=unfenced"), lines
        status, body = get(url, "/api/models")
        assert status == 200 and body["default"] == "lease"
    finally:
        stop_server(proc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "lease", "--design", "atomic"], "lease has no design 'atomic'"),
        (["--design", "fenced"], "the session model has no design 'fenced'"),
        (["--model", "nope"], "invalid choice"),
    ],
)
def test_explore_refuses_a_design_the_model_lacks(args, message):
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "explore", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and message in p.stderr, p.stderr


def test_one_configuration_has_one_key():
    """A bound named at its default, or a hazard's bound at 0, is the same configuration (one
    exploration), and a hazard's bound at 1 is another."""
    from mcp_inflight.web.declared_api import config_of

    plain = config_of({"model": "lease"})
    assert config_of({"model": "lease", "workers": "2", "failover": "0", "ids": ""}) == plain
    assert config_of({"model": "lease", "design": "fenced", "failover": ""}) == plain
    assert config_of({"model": "lease", "failover": "1"}) != plain
    assert config_of({"model": "lease", "workers": "3"}) != plain


def test_an_enabled_hazard_is_in_the_configuration(base):
    v = models_view(base, model="lease", failover="1", workers="1")
    assert v["config"]["bounds"]["failover"] == 1
    assert v["config"]["label"].endswith(", failover enabled")
    assert "failover" not in models_view(base, model="lease")["config"]["bounds"]
