"""The explorer page's JSON API, over real HTTP on loopback, served by ``mcp-inflight explore``.

The server runs as users run it (the command line, in its own process).  What it says is
checked against the explorer itself: the moves it offers at a state are the explorer's edges
from that state, each trace it lists breaks (or reaches) its property where the explorer says,
and a path in a URL gives the same view from a fresh server.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from mcp_inflight.model import DESIGNS, FIELDS, Config
from mcp_inflight.model.trace import changes, id_name, inst_name, render_value
from mcp_inflight.proofs.explorer import explore
from support import procs

DEFAULTS = [
    "--design",
    "unguarded",
    "--revision",
    "2026-07-28",
    "--transport",
    "http",
    "--ids",
    "2",
    "--requests",
    "2",
]


def start_server(*args: str, timeout: float = 30.0):
    """``mcp-inflight explore --port 0 ARGS`` in its own process: ``(process, base URL)``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "explore", "--port", "0", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+/)", line)
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
    stop_server(proc)
    raise RuntimeError("mcp-inflight explore did not start")


def stop_server(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture(scope="module")
def base():
    proc, url = start_server(*DEFAULTS)
    yield url
    stop_server(proc)


_TOKENS: dict[str, str] = {}


def token(base: str) -> str:
    """The server's token for what changes its state, as its page carries it."""
    if base not in _TOKENS:
        with urllib.request.urlopen(base, timeout=60) as r:
            page = r.read().decode()
        _TOKENS[base] = re.search(r'name="explore-token" content="([^"]+)"', page).group(1)
    return _TOKENS[base]


def get(base: str, route: str, **query):
    url = base + route.lstrip("/") + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(url, headers={"X-Explore-Token": token(base)})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
            return r.status, json.loads(body) if r.headers[
                "Content-Type"
            ] == "application/json" else body.decode()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def view(base: str, **query) -> dict:
    status, body = get(base, "/api/view", **query)
    assert status == 200, body
    return body


def traces(base: str, **query) -> dict:
    deadline = time.monotonic() + 120
    while True:
        status, body = get(base, "/api/traces", **query)
        assert status == 200, body
        if body["status"] not in ("queued", "exploring") or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


# --- the explorer's state graph, to compare with ------------------------------------------


def _graph(cfg: Config):
    """The explorer's state graph, out of the states a walk asks for: ``(s0, edges)``, the
    initial state and ``edges(s)`` -> ``{token: (post, changes)}`` for a state ``s`` met along
    the edges, by the one explorer's compiled rules of the session's declaration (without
    symmetry, so each state is expanded as it is; each state expanded once, however many
    edges reach it)."""
    from mcp_inflight.model.session_spec import spec
    from mcp_inflight.proofs.compiled_spec import compile_spec

    sp = spec(cfg, liveness=False)
    fire = [(m, f) for m, f in zip(sp.moves(), compile_spec(sp).fire, strict=True) if f]
    expanded: dict = {}

    def edges(pre) -> dict:
        out = expanded.get(pre)
        if out is None:
            out = expanded[pre] = {}
            for m, f in fire:
                t = f(pre)
                if t is None:
                    continue
                args = m.kw
                tok = ".".join(
                    [m.name, inst_name(args["r"])] + ([id_name(args["i"])] if "i" in args else [])
                )
                out[tok] = (t[0], changes(pre, t[0]))
        return out

    return sp.initial(), edges


def _table(v: dict) -> dict:
    return {
        (row["field"], c["key"]): c["value"] for row in v["state"]["rows"] for c in row["cells"]
    }


def _rendered(s) -> dict:
    out = {}
    for f in FIELDS:
        vals = getattr(s, f.name)
        if f.key is None:
            out[(f.name, None)] = render_value(f, vals)
        else:
            name = inst_name if f.key == "inst" else id_name
            out.update({(f.name, name(k)): render_value(f, x) for k, x in enumerate(vals)})
    return out


@pytest.mark.parametrize(
    "design,revision,transport,ids",
    [
        ("unguarded", "2026-07-28", "http", 2),
        ("atomic", "2026-07-28", "stdio", 2),  # stdio: send times renumbered by the model
        # the whole 2025-11-25 http graph (server-to-client requests, the session's end) is
        # large even at one id: slow
        pytest.param("check_then_claim", "2025-11-25", "http", 1, marks=pytest.mark.slow),
    ],
)
def test_enabled_moves_are_the_explorers_edges(base, design, revision, transport, ids):
    """Random walks through the API: at every state the page shows the explorer's state and
    offers the explorer's edges from it, each with the explorer's changes: every state an edge
    reaches is offered, and edges alike but for a hidden argument that reach one state are
    offered once."""
    cfg = Config(DESIGNS[design], revision, transport, ids=ids, requests=2)
    s0, edges = _graph(cfg)
    rng = random.Random(7)
    q = dict(design=design, revision=revision, transport=transport, ids=ids, requests=2)
    seen_states = 0
    for _ in range(12):
        path, s = [], s0
        for _ in range(14):
            v = view(base, **q, path="-".join(path))
            offered = {e["token"]: e["changes"] for e in v["enabled"]}
            out = edges(s)
            expected = {t: ch for t, (_, ch) in out.items()}
            where = f"at {'-'.join(path) or 'the initial state'}"
            assert set(offered) <= set(expected), where
            assert all(offered[t] == expected[t] for t in offered), where
            targets = {target for target, _ in out.values()}
            assert {out[t][0] for t in offered} == targets, where
            assert _table(v) == _rendered(s), f"at {'-'.join(path) or 'the initial state'}"
            seen_states += 1
            if not offered:
                break
            tok = rng.choice(sorted(offered))
            path.append(tok)
            s = out[tok][0]
    assert seen_states > 50


def test_initial_view(base):
    v = view(base)
    assert v["at"] == 0 and v["path"] == []
    assert v["config"]["label"] == "unguarded 2026-07-28 http"
    assert {r["life"] for r in v["lifecycle"]} == {"unsent"}
    assert not any(c["before"] for row in v["state"]["rows"] for c in row["cells"])
    status = {p["name"]: p["status"] for p in v["properties"]}
    assert status["no_misrouted_notification"] == "no step yet"
    assert status["no_misrouted_server_request"] == "n/a"  # no server requests on 2026-07-28
    assert status["unique_in_flight"] == "holds"
    assert status["cancelled"] == "not here"
    assert "client_sends.A.1" in {e["token"] for e in v["enabled"]}
    assert v["diagram"]["arrows"] == []


def test_changed_fields_are_marked(base):
    v = view(base, path="client_sends.A.1-arrive.A")
    changed = {
        (row["field"], c["key"]): (c["before"], c["value"])
        for row in v["state"]["rows"]
        for c in row["cells"]
        if c["before"] is not None
    }
    assert changed == {("life", "A"): ("sent", "received")}
    assert v["story"] == "server reads A's request (id=1)"
    life = {r["instance"]: r for r in v["lifecycle"]}
    assert life["A"]["history"] == ["unsent", "sent", "received"]
    assert (life["A"]["sender"], life["A"]["id"]) == ("client", "1")


def test_listed_traces_break_their_property_where_the_explorer_says(base):
    t = traces(base)
    assert t["status"] == "done" and t["complete"]
    res = explore(
        Config(DESIGNS["unguarded"], "2026-07-28", "http", ids=2, requests=2), progress=False
    )
    failing = {v.name for v in res.verdicts if v.applies and v.trace is not None}
    assert {x["name"] for x in t["traces"]} == failing
    for tr in t["traces"]:
        v = view(base, path="-".join(tr["path"]))
        prop = {p["name"]: p for p in v["properties"]}[tr["name"]]
        if tr["kind"] == "witness":
            assert prop["status"] == "reached", tr["name"]
        else:
            assert prop["status"] == "fails", tr["name"]
            assert tr["name"] in v["path"][-1]["breaks"], tr["name"]
            # it held one step earlier
            before = view(base, path="-".join(tr["path"]), at=len(tr["path"]) - 1)
            assert {p["name"]: p for p in before["properties"]}[tr["name"]]["status"] != "fails"


def test_diagram_marks_the_misrouted_message_and_the_wrong_cancel(base):
    t = {x["name"]: x for x in traces(base)["traces"]}
    v = view(base, path="-".join(t["no_misrouted_notification"]["path"]))
    lanes = [lane["title"] for lane in v["diagram"]["lanes"]]
    assert lanes[:2] == ["client", "rogue"] and lanes[-1] == "server core"
    marked = [a for a in v["diagram"]["arrows"] if a["marked"]]
    assert [(a["step"], a["marked"], a["dst"]) for a in marked] == [(7, "MISROUTED", "SB")]
    v = view(base, path="-".join(t["cancel_hits_target"]["path"]))
    assert [a["marked"] for a in v["diagram"]["arrows"]][-1] == "WRONG TARGET"


def test_a_broken_property_says_which_part_fails(base):
    t = {x["name"]: x for x in traces(base)["traces"]}
    v = view(base, path="-".join(t["unique_in_flight"]["path"]))
    p = {p["name"]: p for p in v["properties"]}
    assert p["unique_in_flight"]["where"] == ["p = A", "q = B"]
    assert set(p["unique_in_flight"]["reads"]) == {
        "life[A] = in_flight",
        "life[B] = in_flight",
        "rid[A] = 1",
        "rid[B] = 1",
        # read by the property's second case (a cancelled handler still running counts)
        "running[A] = true",
        "running[B] = true",
    }
    assert "where" not in p["quiescent_clean"]  # holds: nothing to explain
    v = view(base, path="-".join(t["no_misrouted_notification"]["path"]))
    p = {p["name"]: p for p in v["properties"]}
    assert p["no_misrouted_notification"]["outputs"] == [
        {"kind": "progress", "stream": "B", "out": True}
    ]


def test_position_on_a_path(base):
    path = "client_sends.A.1-rogue_sends.B.1-arrive.A-arrive.B-admit.A"
    full = view(base, path=path, at=3)
    prefix = view(base, path="client_sends.A.1-rogue_sends.B.1-arrive.A")
    assert full["at"] == 3 and len(full["path"]) == 5
    for key in ("state", "lifecycle", "properties", "story"):
        assert full[key] == prefix[key], key
    # the same moves; the one the path takes next is flagged
    assert [dict(e, next=False) for e in full["enabled"]] == prefix["enabled"]
    assert [e["token"] for e in full["enabled"] if e["next"]] == ["arrive.B"]
    assert len(full["diagram"]["arrows"]) == 5  # the steps ahead are drawn too


def test_a_path_replays_after_a_restart(base):
    q = dict(
        design="check_then_claim",
        revision="2025-11-25",
        transport="http",
        ids=2,
        requests=3,
        path="client_sends.A.1-arrive.A-check.A-rogue_sends.B.1-arrive.B-check.B",
        at=5,
    )
    first = view(base, **q)
    proc, other = start_server()  # other defaults: the query names everything
    try:
        assert view(other, **q) == first
    finally:
        stop_server(proc)


@pytest.mark.parametrize(
    "query,step,message",
    [
        (dict(path="client_sends.A.1-fly.A"), 2, "not a move"),
        (dict(path="client_sends.A.1-admit.A"), 2, "not enabled"),
        (dict(path="client_sends.Z.1"), 1, "not a move"),
        (dict(design="nope"), None, "unknown design"),
        (dict(ids="x"), None, "whole number"),
        (dict(requests="99"), None, "between"),
        (dict(path="client_sends.A.1", at="2"), None, "between"),
    ],
)
def test_bad_queries_are_400_with_the_reason(base, query, step, message):
    status, body = get(base, "/api/view", **query)
    assert status == 400
    assert message in body["error"] and body["step"] == step


def test_page_and_static_files(base):
    status, html = get(base, "/")
    assert status == 200 and '<script src="/static/app.js">' in html
    assert html.index('<script src="/static/dom.js">') < html.index('src="/static/app.js"')
    for name in ("dom.js", "app.js", "app.css"):
        assert get(base, f"/static/{name}")[0] == 200
    assert get(base, "/static/../server.py")[0] == 404
    assert get(base, "/static/nothing.js")[0] == 404
    assert get(base, "/api/nothing")[0] == 404


def test_meta(base):
    status, m = get(base, "/api/meta")
    assert status == 200
    names = [d["name"] for d in m["designs"]]
    assert names[:3] == ["atomic", "unguarded", "check_then_claim"]
    assert "atomic-split-claim" in names
    assert m["defaults"] == {
        "design": "unguarded",
        "revision": "2026-07-28",
        "transport": "http",
        "ids": 2,
        "requests": 2,
    }
    assert {p["kind"] for p in m["properties"]} == {"invariant", "witness", "hazard"}


def test_the_server_ends_its_exploration_on_sigterm():
    """A stopped server leaves no exploring process behind (the default bound of 2025-11-25
    http takes long enough to be running when the signal comes)."""
    proc, url = start_server(
        "--design",
        "unguarded",
        "--revision",
        "2025-11-25",
        "--transport",
        "http",
        "--ids",
        "2",
        "--requests",
        "3",
    )
    try:
        deadline = time.monotonic() + 30
        while get(url, "/api/traces")[1]["status"] != "exploring":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        children = procs.children(proc.pid)
        assert children
    finally:
        stop_server(proc)
    assert proc.returncode == 0
    deadline = time.monotonic() + 10
    while any(procs.alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(procs.alive(c) for c in children)


# --- recorded runtime traces --------------------------------------------------------------


def post(base: str, route: str, body: bytes, **query):
    url = base + route.lstrip("/") + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"X-Explore-Token": token(base)}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def model_run(design, moves, ids=1, requests=2) -> list:
    """A run of ``design`` on 2025-11-25 http, the profile recorded traces are checked on."""
    from mcp_inflight.model.step import run_of

    return run_of(Config(design, "2025-11-25", "http", ids=ids, requests=requests), moves)


def wire(run) -> bytes:
    """The JSON Lines trace a recorder would write for a model run."""
    from test_trace_replay import to_wire

    return "".join(json.dumps(e) + "\n" for e in to_wire(run)).encode()


DUPLICATE_ADMITTED = [
    ("client_sends", 0, 0),
    ("arrive", 0, None),
    ("admit", 0, None),
    ("rogue_sends", 1, 0),
    ("arrive", 1, None),
    ("admit", 1, None),
    ("emit", 0, None),
]


def test_a_recorded_trace_opens_as_the_runs_that_explain_it(base):
    from mcp_inflight.model.observe import abstract
    from mcp_inflight.model.observe_check import INTERNAL, check
    from mcp_inflight.trace.format import parse

    body = wire(model_run(DESIGNS["unguarded"], DUPLICATE_ADMITTED))
    status, rec = post(base, "/api/recorded", body, name="dup.jsonl")
    assert status == 200, rec
    assert rec["name"] == "dup.jsonl" and rec["clean"] is False
    # on atomic: the run up to the first step it cannot explain, as the replay check says
    v = check(abstract(parse(body.decode().splitlines())))
    on_atomic = rec["runs"][0]
    assert on_atomic["design"] == "atomic" and not on_atomic["clean"]
    assert on_atomic["unexplained"] == v.failed.describe()
    assert len(on_atomic["path"]) == len(v.run)
    # every run opens as a path of the page, and breaks its invariant where the check says
    designs = [r["design"] for r in rec["runs"]]
    assert "unguarded" in designs[1:]
    for run in rec["runs"]:
        q = {k: run[k] for k in ("design", "revision", "transport", "ids", "requests")}
        v2 = view(base, **q, path="-".join(run["path"]))
        assert [s["token"] for s in v2["path"]] == run["path"]
        first = next((n for n, s in enumerate(v2["path"], 1) if s["breaks"]), None)
        if run["broken"] is None:
            assert first is None
        else:
            assert first == run["broken"]["step"]
            assert run["broken"]["invariant"] in v2["path"][first - 1]["breaks"]
    un = rec["runs"][designs.index("unguarded")]
    assert un["broken"]["invariant"] == "unique_in_flight"
    # the server-internal steps (the admits here) are the ones the wire did not show
    internal = [n for n, tok in enumerate(un["path"], 1) if tok.split(".")[0] in INTERNAL]
    assert un["inferred"] == internal and len(internal) == 2
    # listed; the same trace again keeps its entry, another under the same name gets a number
    assert post(base, "/api/recorded", body, name="dup.jsonl")[1]["name"] == "dup.jsonl"
    clean = wire(model_run(DESIGNS["atomic"], DUPLICATE_ADMITTED[:3] + [("respond", 0, None)]))
    status, other = post(base, "/api/recorded", clean, name="dup.jsonl")
    assert status == 200 and other["name"] == "dup.jsonl (2)"
    assert [r["clean"] for r in other["runs"]] == [True]
    listed = get(base, "/api/recorded")[1]["traces"]
    assert [t["name"] for t in listed if t["name"].startswith("dup.jsonl")] == [
        "dup.jsonl",
        "dup.jsonl (2)",
    ]


@pytest.mark.parametrize(
    "body,message",
    [
        (b'{"t": 1}\n', "line 1: missing key"),
        (b"\n\nnope\n", "line 3: not JSON"),
        (b'{"t":1,"exchange":1,"dir":"client->server","kind":"open","method":"POST"}\n', "no "),
        (b"\xff\n", "not UTF-8"),
    ],
)
def test_an_unreadable_recorded_trace_is_400_with_the_reason(base, body, message):
    status, answer = post(base, "/api/recorded", body, name="bad.jsonl")
    assert status == 400 and message in answer["error"]


def test_explore_trace_option_refuses_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    r = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "explore", "--port", "0", "--trace", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "line 1: not JSON" in r.stderr


def test_moves_alike_but_for_a_hidden_argument_are_listed_once():
    """The session's end, enabled "by" each live request, reaches one state: one row, not one
    per request (as the page once listed it)."""
    from mcp_inflight.web import model_api as api
    from mcp_inflight.web import views

    defaults = {
        "design": "unguarded",
        "revision": "2025-11-25",
        "transport": "http",
        "ids": 2,
        "requests": 2,
    }
    path: list[str] = []
    for _ in range(8):
        v = views.view({"path": "-".join(path)}, defaults)
        ends = [r for r in v["enabled"] if r["action"] == "end_session"]
        cfg = views.config_of({"path": "-".join(path)}, defaults)
        steps = api.replay(cfg, path)
        state = steps[-1].post if steps else api.start(cfg)
        moves = [s for s in api.successors(cfg, state) if s.move.action.name == "end_session"]
        if len(moves) > 1:
            break
        path.append(v["enabled"][0]["token"])
    assert len(moves) > 1, "a state where the session's end is enabled twice"
    assert len(ends) == len({m.post for m in moves}) == 1
    stories = [r["story"] for r in v["enabled"]]
    assert len(stories) == len(set(stories))
