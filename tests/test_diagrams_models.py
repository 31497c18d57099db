"""The declared models' state graphs (``mcp_inflight/draw/models.py``): every model and design is
drawn, a whole graph is the explorer's graph, a quotient is what its definition says, failing
states and transitions are red, and ``diagrams --check`` sees an edited drawing."""

from __future__ import annotations

import pathlib
import re
import shutil
from typing import Any

import pytest

from mcp_inflight import draw
from mcp_inflight.draw import models as draw_models
from mcp_inflight.draw.model_graphs import MODELS, PROJECTIONS, Graph, _node_of, _replay, build
from mcp_inflight.model import lease, rounds, subscriptions
from mcp_inflight.proofs.declared import explore, transitions

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "diagrams" / "models"
HAVE_DOT = shutil.which("dot") is not None


def _numbering(spec: Any) -> tuple[dict[Any, int], list[tuple[Any, Any, Any]]]:
    """The explorer's transitions, and each state numbered in the order they first appear."""
    ts = list(transitions(spec))
    num: dict[Any, int] = {spec.initial(): 0}
    for pre, _, post in ts:
        for s in (pre, post):
            num.setdefault(s, len(num))
    return num, ts


def _quotient(spec: Any, keeps: tuple[str, ...]) -> tuple[dict[Any, int], dict[Any, int]]:
    """The quotient by ``keeps`` straight from its definition: states per key, and transitions
    per (key, action, key)."""
    num, ts = _numbering(spec)

    def key(s: Any) -> tuple[Any, ...]:
        return tuple(getattr(s, v) for v in keeps)

    members: dict[Any, int] = {}
    for s in num:
        members[key(s)] = members.get(key(s), 0) + 1
    edges: dict[Any, int] = {}
    for pre, m, post in ts:
        e = (key(pre), m.name, key(post))
        edges[e] = edges.get(e, 0) + 1
    return members, edges


def _keys(g: Graph, members: dict[Any, int]) -> list[Any]:
    """The quotient key of each node of ``g``, read back from its label lines."""
    out = []
    by_label = {}
    for k in members:
        by_label[tuple(_label_of(g, k))] = k
    for lines in g.nodes:
        out.append(by_label[tuple(lines)])
    return out


def _label_of(g: Graph, key: tuple[Any, ...]) -> list[str]:
    from mcp_inflight.draw.model_graphs import _label

    spec = MODELS[g.model].spec(g.design)
    s = spec.initial()._replace(**dict(zip(g.keeps, key, strict=True)))
    return _label(spec, g.keeps, s)


def test_every_model_and_design_is_drawn_and_indexed():
    index = (COMMITTED / "index.md").read_text()
    for model, mod in MODELS.items():
        assert model in PROJECTIONS
        for design in mod.DESIGNS:
            kinds = ("dot", "mmd", "svg") if HAVE_DOT else ("dot", "mmd")
            for kind in kinds:
                assert (COMMITTED / f"{model}-{design}.{kind}").is_file(), (model, design, kind)
            assert f"[{design}]({model}-{design}.svg)" in index
            first = (COMMITTED / f"{model}-{design}.dot").read_text().splitlines()[0]
            assert first.startswith(f"// {model} {design} ("), first
    drawn = {p.stem for p in COMMITTED.glob("*.dot")}
    assert drawn == {f"{m}-{d}" for m, mod in MODELS.items() for d in mod.DESIGNS}


def test_a_small_model_is_drawn_whole_as_the_explorer_walks_it():
    spec = subscriptions.spec("graceful-response")
    res = explore(spec)
    g = build(spec, limit=res.states)
    assert g.kind == "full" and g.keeps == ()
    assert (len(g.nodes), sum(g.edges.values())) == (res.states, res.transitions)
    num, ts = _numbering(spec)
    assert set(g.edges) == {(num[a], str(m), num[z]) for a, m, z in ts}
    assert len(g.edges) == res.transitions  # one arrow per transition
    assert g.init == 0 and g.members == [1] * res.states
    text = draw_models.dot(g)
    assert text.count(" -> ") == len({(a, z) for a, _, z in g.edges if a != z}) + 1
    assert "a node is one state" in draw_models.caption(g)
    assert quote_escaped_caption(g) in text


@pytest.mark.parametrize(
    "spec", [subscriptions.spec("no-unsubscribe"), lease.spec("no-ttl")], ids=lambda s: s.label()
)
def test_a_quotient_has_the_nodes_and_arrows_its_definition_gives(spec):
    g = build(spec)
    assert g.kind == "quotient" and g.keeps == PROJECTIONS[spec.model]
    members, edges = _quotient(spec, g.keeps)
    keys = _keys(g, members)
    assert len(keys) == len(set(keys)) == len(members)
    assert {k: g.members[n] for n, k in enumerate(keys)} == members
    assert {(keys[a], lab, keys[z]): c for (a, lab, z), c in g.edges.items()} == edges
    assert sum(g.members) == g.states and sum(g.edges.values()) == g.transitions
    words = draw_models.caption(g)
    assert f"{g.states} states, {g.transitions} transitions" in words
    assert f"values shown of {', '.join(g.keeps)}" in words
    assert quote_escaped_caption(g) in draw_models.dot(g)


def quote_escaped_caption(g: Graph) -> str:
    """The caption as the DOT graph label holds it (wrapped lines)."""
    return "\\n".join(draw_models._wrap(draw_models.caption(g)))


def _red_nodes(dot_text: str) -> set[int]:
    return {int(n) for n in re.findall(r'^\s+n(\d+) \[.*fillcolor="#ffd6d6"', dot_text, re.M)}


def _red_arrows(dot_text: str) -> set[tuple[int, int]]:
    found = re.findall(r'^\s+n(\d+) -> n(\d+) \[.*color="#c62828"', dot_text, re.M)
    return {(int(a), int(z)) for a, z in found}


def _expected_red(spec: Any, g: Graph) -> tuple[set[int], set[tuple[int, int]]]:
    """Nodes holding a state that breaks an ``always`` property, and arrows between two nodes
    standing for a transition that breaks a ``step`` property, judged on the concrete logic."""
    b = spec.logic()
    members, _ = _quotient(spec, g.keeps)
    node = {k: n for n, k in enumerate(_keys(g, members))}
    num, ts = _numbering(spec)

    def key(s: Any) -> tuple[Any, ...]:
        return tuple(getattr(s, v) for v in g.keeps)

    always = [p for p in spec.props if p.kind == "always"]
    steps = [p for p in spec.props if p.kind == "step"]
    nodes = {node[key(s)] for s in num if any(not p.fn(b, s) for p in always)}
    arrows = set()
    for pre, m, post in ts:
        a, z = node[key(pre)], node[key(post)]
        out = m.act.outputs(b, pre, **m.kw)
        if a != z and any(not p.on_step(b, pre, post, m, out) for p in steps):
            arrows.add((a, z))
    return nodes, arrows


@pytest.mark.parametrize("design", ["cancelled-notification", "by-listen-id", "no-unsubscribe"])
def test_a_mutants_failing_states_and_transitions_are_red(design):
    spec = subscriptions.spec(design)
    g = build(spec)
    text = draw_models.dot(g)
    nodes, arrows = _expected_red(spec, g)
    assert nodes or arrows, "the mutant breaks nothing here: the test would show nothing"
    assert _red_nodes(text) == nodes
    assert _red_arrows(text) == arrows
    for n in nodes:
        line = next(x for x in text.splitlines() if x.startswith(f"    n{n} ["))
        assert "✗ " in line
    for p in g.failing:
        assert p in text, p
    mmd = draw_models.mermaid(g)
    assert {int(n) for n in re.findall(r"^\s+class n(\d+) bad$", mmd, re.M)} == nodes


def test_the_safe_design_has_nothing_red():
    g = build(subscriptions.spec("graceful-response"))
    text = draw_models.dot(g)
    assert _red_nodes(text) == set() and _red_arrows(text) == set()
    assert not [x for x in text.splitlines() if x.startswith("    n") and "✗" in x]
    assert g.witness_nodes and "◆ graceful_end" in text


def test_the_red_check_catches_a_missing_or_wrong_colour():
    spec = subscriptions.spec("cancelled-notification")
    g = build(spec)
    nodes, _ = _expected_red(spec, g)
    text = draw_models.dot(g)
    n = min(nodes)
    washed = re.sub(
        rf'^(\s+n{n} \[.*?), style="rounded,filled", fillcolor="#ffd6d6", color="#c62828"',
        r"\1",
        text,
        flags=re.M,
    )
    assert washed != text and _red_nodes(washed) == nodes - {n}
    safe = min(set(range(len(g.nodes))) - nodes)
    painted = text.replace(f"    n{safe} [", f'    n{safe} [fillcolor="#ffd6d6", ', 1)
    assert _red_nodes(painted) == nodes | {safe}


WALKED = [
    *[subscriptions.spec(d) for d in subscriptions.DESIGNS],
    lease.spec("no-ttl"),
    rounds.spec("stateless"),
    rounds.spec("no-nonce"),
]


@pytest.mark.parametrize("spec", WALKED, ids=lambda s: s.label())
def test_the_walk_agrees_with_the_explorer(spec):
    """States, transitions, broken properties, and each witness on the node (arrow) where the
    explorer's shortest run reaches it."""
    g = build(spec)
    res = explore(spec)
    assert (g.states, g.transitions) == (res.states, res.transitions)
    assert g.failing == res.broken()
    reached = {p.name for p in spec.props if res.verdicts[p.name] == "reached"}
    assert set(g.witness_nodes) | set(g.witness_edges) == reached
    assert set(g.unreached) == {p.name for p in spec.props if res.verdicts[p.name] == "not reached"}
    for name in reached:
        run = _replay(spec, res.traces[name])
        if name in g.witness_nodes:
            last = run[-1][2] if run else spec.initial()
            assert g.witness_nodes[name] == _node_of(spec, g, last), name
        else:
            pre, m, post = run[-1]
            e = (_node_of(spec, g, pre), m.name, _node_of(spec, g, post))
            assert g.witness_edges[name] == e, name
    for name, n in g.liveness_nodes.items():
        assert res.verdicts[name] == "fails"
        assert n == _node_of(spec, g, _replay(spec, res.traces[name])[-1][2])


def test_a_projection_onto_a_variable_the_model_lacks_is_refused():
    with pytest.raises(KeyError):
        build(subscriptions.spec("graceful-response"), keeps=("no_such_variable",))


@pytest.mark.slow  # regenerates every diagram (tens of seconds on a cold cache)
def test_check_names_an_edited_model_drawing(tmp_path, capsys):
    out = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", out)
    ok, report = draw.check(out)
    assert ok, report
    edited = out / "models" / "lease-unfenced.dot"
    edited.write_text(edited.read_text().replace("single_writer", "single_writr", 1))
    (out / "models" / "rounds-sealed.mmd").unlink()
    (out / "models" / "lease-gone.dot").write_text("digraph {}\n")
    ok, report = draw.check(out)
    assert not ok
    assert "stale:   models/lease-unfenced.dot" in report
    assert "missing: models/rounds-sealed.mmd" in report
    assert "extra:   models/lease-gone.dot" in report
    assert "single_writr" in report
    assert draw.run(["--out", str(out), "--check"]) == 1
    assert "models/lease-unfenced.dot" in capsys.readouterr().err


@pytest.mark.slow  # starts Chromium and renders 30 drawings with Mermaid
def test_every_mermaid_drawing_renders():
    """Each committed ``models/*.mmd`` is drawn by the Mermaid release the docs site pins, with
    no error drawing; a broken source is caught the same way."""
    from support.browser import SKIPS, chromium

    if any(m.args[0] for m in SKIPS):
        pytest.skip("no Chromium or Playwright")
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_build", ROOT / "docs/_hooks/build.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    script = hooks.mermaid_script().read_text()
    render = """async (t) => {
      try {
        const {svg} = await mermaid.render("m" + Math.floor(Math.random() * 1e9), t);
        return svg.includes('aria-roledescription="error"') ? "error drawing" : "ok";
      } catch (e) { return String(e).slice(0, 300); }
    }"""
    texts = {p.name: p.read_text() for p in sorted(COMMITTED.glob("*.mmd"))}
    texts["broken.mmd"] = "stateDiagram-v2\n    n0 --> : x\n"
    with chromium() as ctx:
        page = ctx.new_page()
        page.set_content("<html><body></body></html>")
        page.add_script_tag(content=script)
        page.evaluate("mermaid.initialize({startOnLoad: false})")
        seen = {name: page.evaluate(render, text) for name, text in texts.items()}
    assert seen.pop("broken.mmd") != "ok"
    assert len(seen) == len(list(COMMITTED.glob("*.dot")))
    assert {n: r for n, r in seen.items() if r != "ok"} == {}
