"""The diagrams are deterministic, complete, drift-checked and say what the model says."""

from __future__ import annotations

import functools
import html
import pathlib
import re
import shutil

import pytest

from mcp_inflight import draw
from mcp_inflight.draw import output as draw_output
from mcp_inflight.draw import render
from mcp_inflight.draw import sequence as draw_sequence
from mcp_inflight.draw import session as draw_session
from mcp_inflight.model import lifecycle as lc
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.logic import Concrete
from mcp_inflight.model.properties import INVARIANTS
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import domains
from mcp_inflight.proofs.explorer import explore
from support.explored import edges

HAVE_DOT = shutil.which("dot") is not None


def _texts(d, rev):
    out = {
        "dot": (d / f"lifecycle-{rev}.dot").read_text(),
        "mmd": (d / f"lifecycle-{rev}.mmd").read_text(),
    }
    if HAVE_DOT:
        out["svg"] = html.unescape((d / f"lifecycle-{rev}.svg").read_text())
    return out


def _rel(paths, root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in paths}


#: The diagrams' contents (``{relative name: bytes}``), with and without ``dot``, drawn once for
#: the module: a function of the model alone (``test_deterministic`` draws them from scratch
#: and compares them with the committed tree, which another process drew).
_CONTENTS: dict[bool, dict[str, bytes]] = {}
_draw_contents = draw_output._contents


def _contents_once(have_dot, progress=None):
    if have_dot not in _CONTENTS:
        _CONTENTS[have_dot] = _draw_contents(have_dot, progress)
    return _CONTENTS[have_dot]


@pytest.fixture
def contents_once(monkeypatch):
    """``generate`` and ``check`` (and ``run``, through them) write and compare the module's one
    drawing of the contents: what they do with a directory is what these tests check."""
    monkeypatch.setattr(draw_output, "_contents", _contents_once)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One generation of the whole diagram tree, shared by the module's tests: those that only
    read it read this directory, and those that change files work on a copy of it."""
    out = tmp_path_factory.mktemp("generated")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(draw_output, "_contents", _contents_once)
        draw.generate(out)
    return out


@pytest.fixture(scope="module")
def generated_check(generated):
    """``draw.check`` of the shared generation, the same for every test that asks for it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(draw_output, "_contents", _contents_once)
        return draw.check(generated)


def _copy(generated, tmp_path):
    """A copy of the shared generation that a test may change."""
    out = tmp_path / "diagrams"
    shutil.copytree(generated, out)
    return out


@pytest.mark.slow  # several seconds of real time; CI runs it with the slow tests
def test_deterministic(tmp_path, monkeypatch):
    """A generation from scratch (explorations and renderings not cached, in this process or on
    disk) is byte for byte the committed tree, which an earlier process generated: the output
    depends on the model alone.  Only the native engines' compiled C (build artifacts keyed by
    their source, no result in them) is shared with the other runs."""

    from mcp_inflight.proofs import native_build

    built = native_build.cache_dir()
    built.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "native").symlink_to(built, target_is_directory=True)
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path / "cache"))
    draw.clear_caches()
    a = _rel(draw.generate(tmp_path / "a"), tmp_path / "a")
    committed = pathlib.Path(__file__).resolve().parent.parent / "diagrams"
    b = _rel((p for p in committed.rglob("*") if p.is_file()), committed)
    assert a == b
    lifecycle = [n for n in a if n.startswith("lifecycle-")]
    assert len(lifecycle) == len(lc.REVISIONS) * (3 if HAVE_DOT else 2)
    assert any(n.startswith("session/") for n in a)
    assert any(n.startswith("counterexamples/") and n.endswith(".mmd") for n in a)
    for name, data in a.items():
        assert b"graphviz version" not in data and str(tmp_path).encode() not in data, name
        assert str(pathlib.Path.cwd()).encode() not in data, name


def test_check_passes_then_detects_stale_and_missing(
    generated, generated_check, tmp_path, contents_once
):
    ok, report = generated_check
    assert ok, report
    out = _copy(generated, tmp_path)
    rev = lc.REVISIONS[0]
    stale = out / f"lifecycle-{rev}.mmd"
    stale.write_text(stale.read_text().replace("send", "sned", 1))
    (out / f"lifecycle-{lc.REVISIONS[1]}.dot").unlink()
    ok, report = draw.check(out)
    assert not ok
    assert f"stale:   lifecycle-{rev}.mmd" in report
    assert f"missing: lifecycle-{lc.REVISIONS[1]}.dot" in report
    assert "-    unsent --> sent : sned" in report and "+    unsent --> sent : send" in report


def test_check_detects_stale_missing_and_extra_session_and_counterexample_files(
    generated, generated_check, tmp_path, contents_once
):
    ok, report = generated_check
    assert ok, report
    out = _copy(generated, tmp_path)
    cex = sorted((out / "counterexamples").glob("*.mmd"))[0]
    cex.write_text(cex.read_text().replace("server reads", "server eats", 1))
    full = sorted((out / "session").glob("session-*-http.dot"))[0]
    full.unlink()
    (out / "counterexamples" / "index.md").write_text("old\n")
    (out / "counterexamples" / "gone-2025-11-25-http-no_orphan.mmd").write_text("x\n")
    ok, report = draw.check(out)
    assert not ok
    rel_cex = f"counterexamples/{cex.name}"
    assert f"stale:   {rel_cex}" in report
    assert "stale:   counterexamples/index.md" in report
    assert f"missing: session/{full.name}" in report
    assert "extra:   counterexamples/gone-2025-11-25-http-no_orphan.mmd" in report
    assert "server eats" in report and "server reads" in report
    # regenerating removes what the model no longer produces, and check is happy again
    draw.generate(out)
    assert not (out / "counterexamples" / "gone-2025-11-25-http-no_orphan.mmd").exists()
    ok, report = draw.check(out)
    assert ok, report
    if HAVE_DOT:
        svg = sorted((out / "session").glob("*-reduced.svg"))[0]
        svg.unlink()
        ok, report = draw.check(out)
        assert f"missing: session/{svg.name}" in report


def test_run_exit_codes(tmp_path, capsys, contents_once):
    assert draw.run(["--out", str(tmp_path)]) == 0
    assert draw.run(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / f"lifecycle-{lc.REVISIONS[0]}.dot").write_text("stale\n")
    assert draw.run(["--out", str(tmp_path), "--check"]) == 1
    assert draw.run(["--bogus"]) == 2


@pytest.mark.parametrize("rev", lc.REVISIONS)
def test_every_state_and_trigger_in_every_format(generated, rev):
    for fmt, text in _texts(generated, rev).items():
        for s in lc.STATES:
            assert s in text, (fmt, s)
        for r in lc.table(rev):
            label = r.trigger + (" [" + ", ".join(r.conditions) + "]" if r.conditions else "")
            assert label in text, (fmt, label)
        assert "model/session_conditions.py CONDITIONS" in text, fmt


def test_revisions_differ_where_the_table_differs(tmp_path):
    old, new = lc.REVISIONS
    assert (
        'in_flight" -> "stream_broken" [label="stream_closed [stream_open]"'
        in draw.dot_lifecycle(old)
    )
    assert 'in_flight" -> "cancelled" [label="stream_closed"' in draw.dot_lifecycle(new)
    assert "in_flight --> stream_broken : stream_closed [stream_open]" in draw.mermaid_lifecycle(
        old
    )
    assert "in_flight --> cancelled : stream_closed\n" in draw.mermaid_lifecycle(new)

    def edges(text):
        return {l.strip() for l in text.splitlines() if "-->" in l or "->" in l}

    a, b = edges(draw.mermaid_lifecycle(old)), edges(draw.mermaid_lifecycle(new))
    assert a - b == {"in_flight --> stream_broken : stream_closed [stream_open]"}
    assert b - a == {"in_flight --> cancelled : stream_closed"}


def test_committed_diagrams_are_current(contents_once):
    import pathlib

    ok, report = draw.check(pathlib.Path(__file__).resolve().parent.parent / "diagrams")
    assert ok, report


def test_without_dot_svg_is_skipped_with_one_warning(
    generated, tmp_path, monkeypatch, capsys, contents_once
):
    monkeypatch.setattr(render, "dot_binary", lambda: None)
    written = draw.generate(tmp_path / "nodot")
    assert all(p.suffix != ".svg" for p in written)
    assert capsys.readouterr().err.count("warning") == 1
    ok, report = draw.check(generated)
    assert ok, report
    assert "SVG files were not compared" in report


# --- the session state graph --------------------------------------------------------------


def test_session_bound_is_the_smallest_that_shows_every_action():
    ids, req = draw_session.bound()
    for d in draw_session.DESIGNS_DRAWN:
        cfg = Config(DESIGNS[d], draw_session.REVISION, draw_session.TRANSPORT, ids, req)
        res = explore(cfg, symmetry=False, progress=False)
        assert not res.dead_actions, (d, res.dead_actions)
        assert set(res.coverage) == {a.name for a in actions_for(cfg)}
    smaller = draw_session.CANDIDATE_BOUNDS[: draw_session.CANDIDATE_BOUNDS.index((ids, req))]
    for ids2, req2 in smaller:
        dead = [
            explore(
                Config(DESIGNS[d], draw_session.REVISION, draw_session.TRANSPORT, ids2, req2),
                symmetry=False,
                progress=False,
            ).dead_actions
            for d in draw_session.DESIGNS_DRAWN
        ]
        assert any(dead), (ids2, req2)


_NODE = re.compile(r"^    s(\d+) \[(.*)\];$")
_TOOLTIP = re.compile(r'tooltip="((?:[^"\\]|\\.)*)"')


def _full_nodes(text):
    """``{state text: red?}`` from a complete session graph's DOT."""
    out = {}
    for line in text.splitlines():
        m = _NODE.match(line)
        if not m:
            continue
        tip = _TOOLTIP.search(m.group(2)).group(1).split(" | breaks: ")[0]
        out[tip] = _red(m.group(2))
    return out


def _red(attrs):
    """The node or edge is drawn red (its line colour, not only its text)."""
    return re.search(r'(^|, )color="' + draw_session.RED + '"', attrs) is not None


@functools.cache
def _explored(cfg):
    """Every state and every transition of ``cfg`` (no symmetry), judged here with the model's
    invariants: ``({state: [broken state invariants]}, number of transitions breaking a step
    invariant)``; explored once per configuration for the tests that read it."""
    b = Concrete(domains(cfg))
    states, bad_edges = set(), [0]
    step = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "step"]

    for pre, a, args, post, out in edges(cfg, symmetry=False):
        states.update((pre, post))
        if any(not p.fn(b, pre, post, cfg, a, args["r"], args.get("i"), out) for p in step):
            bad_edges[0] += 1
    state = [p for p in INVARIANTS if p.applies(cfg) and p.scope == "state"]
    return {s: [p.name for p in state if not p.fn(b, s, cfg)] for s in states}, bad_edges[0]


@pytest.mark.parametrize("design", draw_session.DESIGNS_DRAWN)
def test_red_nodes_are_exactly_the_states_that_break_a_state_invariant(design, generated):
    cfg = next(c for c in draw_session.configs() if c.design.name == design)
    name = f"session-{design}-{cfg.revision}-{cfg.transport}"
    text = (generated / "session" / f"{name}.dot").read_text()
    drawn = _full_nodes(text)
    judged, bad_edges = _explored(cfg)
    expected = {draw_session.state_text(cfg, s): bool(bad) for s, bad in judged.items()}
    assert len(expected) == len(judged)  # the tooltip names a state unambiguously
    assert drawn == expected
    red_edges = sum(1 for line in text.splitlines() if " -> " in line and _red(line))
    assert red_edges == bad_edges
    # the reduced view: a merged node is red exactly when one of its states is
    reduced = (generated / "session" / f"{name}-reduced.dot").read_text()
    red_labels = set()
    for line in reduced.splitlines():
        m = re.match(r'^    n\d+ \[label="([^"]*)"(.*)\];$', line)
        if m and _red(m.group(2)):
            red_labels.add(m.group(1).split("\\n(")[0])
    expected_red = {
        draw_session.project_label(cfg, draw_session.project(cfg, s))
        for s, bad in judged.items()
        if bad
    }
    assert red_labels == expected_red
    if design == "unguarded":
        assert drawn and any(drawn.values()) and bad_edges > 0  # there is something to show
    else:
        assert not any(drawn.values()) and bad_edges == 0


def test_red_node_check_catches_a_wrong_colour():
    """The comparison above fails on a drawing that colours one state wrongly."""
    cfg = next(c for c in draw_session.configs() if c.design.name == "unguarded")
    g = draw_session.graph(cfg)
    text = draw_session.dot_full(g)
    n = next(iter(g.bad_states))
    red = f', color="{draw_session.RED}"'
    wrong = text.replace(f'    s{n} [label="{n}"{red}', f'    s{n} [label="{n}"', 1)
    assert wrong != text
    judged, _ = _explored(cfg)
    expected = {draw_session.state_text(cfg, s): bool(bad) for s, bad in judged.items()}
    assert _full_nodes(text) == expected
    assert _full_nodes(wrong) != expected


# --- the counterexample sequence diagrams -------------------------------------------------

_ARROW = re.compile(r"^    (\w+)(->>|-\)|-x)(\w+): (\d+)\. (.*)$")


def _arrows(mmd):
    return [m.groups() for m in map(_ARROW.match, mmd.splitlines()) if m]


def _expected(cfg, trace):
    """``(src, dst, kind, mark)`` per step, read from the explorer's trace (action, args and the
    story it wrote from the model's outputs), not from the drawing code."""
    senders = {}
    out = []
    for st in trace:
        a, r, story = st["action"], st["args"]["r"], st["story"]
        lane = "S" + r
        mark = None
        kind = "->>"
        if a in ("client_sends", "rogue_sends"):
            senders[r] = "C" if a == "client_sends" else "R"
            src, dst, kind = senders[r], lane, "-)"
        elif a == "arrive":
            src, dst = lane, "S"
        elif a in ("check", "claim_stream", "admit", "unwind"):
            src = dst = "S"
        elif a == "answer":
            src, dst = senders.get(r, "C"), "S"
            mark = "WRONG HANDLER" if "another sender's" in story else None
        elif a in ("withdraw", "end_session", "end_request"):
            src = dst = "S"
        elif a == "send_cancel":
            who = "C" if story.startswith("client") else "R"
            src, dst, kind = (who, lane, "-x") if cfg.close_is_cancel else (who, "S", "-)")
        elif a == "deliver_cancel":
            src, dst = (lane if cfg.close_is_cancel else "S"), "S"
            mark = "WRONG TARGET" if "not the one meant" in story else None
        elif a == "break_stream":
            src, dst, kind = lane, "S", "-x"
        else:  # emit, server_request, respond, refuse, reject: where the story says it went
            src = "S"
            m = re.search(r"written on (\w)'s stream", story)
            if "written on its own stream" in story:
                dst = lane
            elif m:
                dst, mark = "S" + m.group(1), "MISROUTED"
            else:
                assert "dropped" in story, story
                kind = "-x"
                dst = None  # the drawing picks the closed stream or the core; only the cross is checked
        out.append((src, dst, kind, mark))
    return out


def _mismatches(cfg, trace, mmd):
    got = _arrows(mmd)
    exp = _expected(cfg, trace)
    if len(got) != len(exp):
        return [f"{len(got)} arrows for {len(exp)} steps"]
    bad = []
    for n, ((src, kind, dst, num, label), (esrc, edst, ekind, emark)) in enumerate(
        zip(got, exp, strict=False), 1
    ):
        if int(num) != n:
            bad.append(f"arrow {n} numbered {num}")
        if (src, kind) != (esrc, ekind) or (edst is not None and dst != edst):
            bad.append(
                f"step {n} ({trace[n - 1]['action']}): drawn {src}{kind}{dst}, "
                f"trace says {esrc}{ekind}{edst}"
            )
        for mark in ("MISROUTED", "WRONG TARGET"):
            if (mark in label) != (emark == mark):
                bad.append(f"step {n}: {mark} {'missing' if emark == mark else 'wrongly drawn'}")
    return bad


def test_a_diagram_for_every_counterexample_and_arrows_follow_the_trace(generated):
    """One diagram per failing invariant or hazard of every design and profile, no more, and
    each one's arrows are its trace's steps, in order, to the lanes the trace names."""
    d = generated / "counterexamples"
    expected_names = set()
    marks = 0
    cfgs = draw_sequence.configs()
    assert {c.design.name for c in cfgs} >= {"unguarded", "check_then_claim"}
    kinds = set()
    for cfg, res in zip(
        cfgs, draw_sequence.results(cfgs), strict=False
    ):  # the explorer's own results
        assert res.cfg == cfg
        bug = cfg.design.name in draw_sequence.LIVENESS_DRAWN
        for v in res.verdicts:
            live = bug and v.kind == "liveness" and not v.ok
            if not (live or (v.kind in ("invariant", "hazard") and v.applies and not v.ok)):
                continue
            if bug and not live:
                continue
            kinds.add((cfg.design.name, v.kind))
            name = f"{cfg.design.name}-{cfg.revision}-{cfg.transport}-{v.name}"
            expected_names.add(name)
            mmd = (d / f"{name}.mmd").read_text()
            assert mmd.splitlines()[3] == "sequenceDiagram"
            assert _mismatches(cfg, v.trace, mmd) == [], name
            if live and v.loop_start < len(v.trace):
                assert f"{v.name} fails: steps {v.loop_start + 1}-" in mmd, name
            elif live:  # the lasso's loop is empty: the run stays in its last state
                assert f"{v.name} fails: the run stays here for ever" in mmd, name
            else:
                assert f"{v.name} breaks" in mmd
            for r in sorted({st["args"]["r"] for st in v.trace}):
                assert re.search(rf"^    participant S{r} as {r}: ", mmd, re.M), (name, r)
            marks += mmd.count("MISROUTED") + mmd.count("WRONG TARGET")
            if HAVE_DOT:
                svg = html.unescape((d / f"{name}.svg").read_text())
                for st_no in range(1, len(v.trace) + 1):
                    assert f">{st_no}. " in svg, (name, st_no)
    drawn = {p.stem for p in d.glob("*.mmd")}
    assert drawn == expected_names
    assert marks > 0
    # the designs that break invariants, and the hazard every design meets, are all drawn
    assert {
        ("unguarded", "invariant"),
        ("check_then_claim", "invariant"),
        ("atomic", "hazard"),
        ("atomic-waits-on-lost", "liveness"),
        ("atomic-waits-on-answer", "liveness"),
        ("atomic-runs-after-respond", "liveness"),
    } <= kinds
    index = (d / "index.md").read_text()
    assert all(f"({n}.svg)" in index for n in expected_names)


def test_arrow_check_catches_a_diagram_that_departs_from_its_trace():
    cfg = Config(DESIGNS["unguarded"], "2026-07-28", "http")
    v = explore(cfg, progress=False).verdict("no_misrouted_notification")
    seq = next(s for s in draw_sequence.sequences([cfg]) if s.invariant == v.name)
    mmd = draw_sequence.mermaid(seq)
    assert _mismatches(cfg, v.trace, mmd) == []
    lines = mmd.splitlines()
    # the misrouted progress drawn onto its own stream
    honest = [l for l in lines if "MISROUTED" in l][0]
    lied = honest.replace("S->>SB", "S->>SA").replace("  MISROUTED", "")
    assert _mismatches(cfg, v.trace, "\n".join(l if l != honest else lied for l in lines))
    # two steps swapped
    arrows = [n for n, l in enumerate(lines) if _ARROW.match(l)]
    swapped = list(lines)
    swapped[arrows[0]], swapped[arrows[1]] = swapped[arrows[1]], swapped[arrows[0]]
    assert _mismatches(cfg, v.trace, "\n".join(swapped))
    # a step left out
    assert _mismatches(cfg, v.trace, "\n".join(l for n, l in enumerate(lines) if n != arrows[2]))


def test_declared_models_counterexamples_are_drawn():
    """Every state or step property a declared model's mutant fails is drawn with its shortest
    trace, one note per step on its actor's lane and the last in the red box; the safe designs
    draw nothing; a liveness failure is drawn as its lasso: the trace, then the loop."""
    from mcp_inflight.draw import paths

    drawn, lassos = paths.counterexamples(), paths.lassos()
    assert set(paths.MODELS) == {"lease", "rounds", "resume", "tasks", "subscriptions"}
    safe = {(name, next(iter(mod.DESIGNS))) for name, mod in paths.MODELS.items()}
    assert ("rounds", "sealed") in safe and ("tasks", "fresh-bound") in safe
    assert not [d for d in [*drawn, *lassos] if (d.model, d.design) in safe]
    for name, mod in paths.MODELS.items():
        mutants = {d for d in mod.DESIGNS if (name, d) not in safe}
        assert {d.design for d in [*drawn, *lassos] if d.model == name} == mutants, name
    assert [(x.model, x.design) for x in lassos] == [
        ("lease", "no-ttl"),
        ("tasks", "unbounded-ttl"),
    ]
    d = next(x for x in drawn if x.name == "rounds-unsigned-forged_refused")
    text = paths.mermaid(d)
    notes = [line for line in text.splitlines() if line.startswith("    Note over ")]
    assert len(notes) == len(d.trace) + 1  # a note per step, and the one naming the property
    assert "forged_refused breaks on this step" in text
    assert text.index("rect rgb(") < text.index(f"{len(d.trace)}. the rogue presents a forged")
    assert "participant rogue" in text and "participant caller" in text
    x = lassos[0]
    text = paths.lasso_mermaid(x)
    notes = [line for line in text.splitlines() if line.startswith("    Note over ")]
    assert x.loop and len(notes) == len(x.trace) + len(x.loop)
    # the loop box holds exactly the loop's steps, numbered on from the trace
    body = text[text.index("    loop for ever") : text.rindex("    end\n    end")]
    assert body.count("Note over") == len(x.loop)
    assert f"{len(x.trace) + 1}. worker w2 pauses" in body
    assert f"[Mermaid]({x.name}.mmd)" in paths.files()["paths/index.md"]
    index = paths.index(drawn, lassos)
    assert all(f"({x.name}.mmd)" in index for x in drawn)
    assert "ids_free_after_lease fails on lease `no-ttl`" in index
    # the tasks model's: a task with no ttl asking for input and answered, round and round
    t = lassos[1]
    assert [s["action"] for s in t.loop] == ["ask", "answer"]
    assert "tasks_end fails on tasks `unbounded-ttl`" in index


def test_sequence_explorations_are_read_back_from_the_cache_on_disk(tmp_path, monkeypatch):
    """The counterexamples' explorations are kept on disk: a new process (here: the in-process
    results forgotten, and the explorer made unusable) reads the same results back, and a cache
    keyed by another model source is not read."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    cfg = next(c for c in draw_sequence.configs() if not c.http)
    draw_sequence.clear()
    first = draw_sequence.results([cfg])[0]
    draw_sequence.clear()

    def no_explorer(cfg):
        raise AssertionError("explored again")

    monkeypatch.setattr(draw_sequence, "_explore", no_explorer)
    again = draw_sequence.results([cfg])[0]
    assert (again.states, again.transitions) == (first.states, first.transitions)
    assert [(v.name, v.ok, v.trace) for v in again.verdicts] == [
        (v.name, v.ok, v.trace) for v in first.verdicts
    ]
    draw_sequence.clear()
    monkeypatch.setattr("mcp_inflight.proofs.cache._sources", lambda: "another model")
    with pytest.raises(AssertionError, match="explored again"):
        draw_sequence.results([cfg])
    draw_sequence.clear()
