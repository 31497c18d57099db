"""The one explorer's native engine (``proofs/native_spec.py``) against its compiled engine.

The native engine generates each declared model's rules and the search as C; it must find
exactly what the compiled engine finds: states, transitions, depth, verdicts, shortest traces
(each step's story and changes), coverage, errors, completeness and deadlocks, on every design
and mutant of every model, and on the session's declaration over HTTP (stdio, whose send
times are kept by rank: ``tests/test_native_spec_ranks.py``), its liveness mutant included, which
breaks the liveness of the graph itself (``reachable`` and ``unstuck``, also shown on a small
counter, and C that judges either wrongly is caught).  The default run takes one or two
designs a model (each a build of a second or so, cached afterwards); the slow run takes all.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from mcp_inflight.model.declare import Act, Spec, Var, reachable, unstuck
from mcp_inflight.model.logic import NONE, Write
from mcp_inflight.proofs import compiled_spec, native_build, native_spec
from mcp_inflight.proofs.explorer import NOT_JUDGED, explore
from mcp_inflight.proofs.native_spec import NativeSpecError, Refused, search_native
from support.declared import MODELS, found, wrong_c
from support.declared import model as _model

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


@cache
def _run(model: str, design: str, engine: str, bounds: tuple = ()):
    """A run of ``model``'s ``design`` (at its default bounds but ``bounds``, as pairs) on
    ``engine``, shared by the tests of this module that ask for the same one (they only read
    it)."""
    return explore(_model(model).spec(design, **dict(bounds)), engine=engine)


def _agree(spec, **kw):
    return _same(explore(spec, engine="compiled", **kw), explore(spec, engine="native", **kw))


def _agree_on(model: str, design: str, bounds: tuple = ()):
    """:func:`_agree` on ``model``'s ``design`` as declared, from the shared runs."""
    return _same(_run(model, design, "compiled", bounds), _run(model, design, "native", bounds))


def _same(compiled, ran):
    assert compiled.engine == "compiled" and ran.engine == "native"
    assert compiled.states > 1
    assert found(ran) == found(compiled)
    assert {k: len(v) for k, v in ran.traces.items()} == {
        k: len(v) for k, v in compiled.traces.items()
    }
    return compiled, ran


def _session(design, revision, transport="http", ids=1, requests=2):
    """The session declaration at ``design`` (a design or a liveness mutant)."""
    from mcp_inflight.model.config import DESIGNS, Config, client_for, liveness_mutants
    from mcp_inflight.model.session_spec import spec

    d = {**DESIGNS, **liveness_mutants()}[design]
    return spec(Config(d, revision, transport, ids, requests, client_for("reusing", revision)))


#: the default run: a safe design and a mutant where a model has a liveness property or a
#: cheap space, one design elsewhere, tasks at one request; every design in the slow run
CASES = [
    ("lease", "fenced", ()),
    ("lease", "unfenced", ()),
    ("rounds", "no-expiry", ()),
    ("resume", "shared-store", ()),
    ("tasks", "fresh-bound", (("requests", 1),)),
    *[("subscriptions", d, ()) for d in _model("subscriptions").DESIGNS],
]


@pytest.mark.parametrize(
    ("model", "design", "bounds"), CASES, ids=[f"{m}-{d}" for m, d, _ in CASES]
)
def test_the_native_engine_finds_what_the_compiled_engine_finds(model, design, bounds):
    _agree_on(model, design, bounds)


@pytest.mark.slow
@pytest.mark.parametrize(("model", "design"), [(m, d) for m in MODELS for d in _model(m).DESIGNS])
def test_the_native_engine_agrees_on_every_design_at_the_default_bounds(model, design):
    _agree(_model(model).spec(design))


def test_the_native_engine_agrees_on_the_session_declaration_over_http():
    # liveness (requests_answered, under the fairness it names) judged on the C side's graph
    compiled, ran = _agree(_session("atomic", "2026-07-28"))
    assert "requests_answered" in ran.verdicts


@pytest.mark.slow
@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_the_native_engine_agrees_on_every_session_design_over_http(design, revision):
    _agree(_session(design, revision))


def test_a_mutants_failure_is_found_natively_with_its_shortest_trace():
    compiled, ran = _agree_on("lease", "unfenced")
    broken = ran.broken()
    assert broken and broken == compiled.broken()
    for name in broken:
        assert ran.traces[name] == compiled.traces[name] and ran.traces[name]
    assert not ran.ok
    assert _agree_on("lease", "fenced")[1].ok


def test_liveness_fails_natively_where_a_fair_run_can_stay_away_from_the_goal():
    L = _model("lease")
    for design in L.DESIGNS:
        spec = L.spec(design)
        if not any(p.kind == "liveness" for p in spec.props):
            continue
        compiled = _run("lease", design, "compiled")
        live = [p.name for p in spec.props if p.kind == "liveness"]
        if any(compiled.verdicts[n] == "fails" for n in live):
            ran = _run("lease", design, "native")
            assert [ran.verdicts[n] for n in live] == [compiled.verdicts[n] for n in live]
            assert {n: ran.traces.get(n) for n in live} == {n: compiled.traces.get(n) for n in live}
            # the lasso's loop, walked on the edges the C search kept, is the compiled engine's
            assert any(ran.loops.get(n) for n in live)
            assert {n: ran.loops.get(n) for n in live} == {n: compiled.loops.get(n) for n in live}
            return
    pytest.skip("no lease design fails a liveness property at the default bounds")


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_liveness_of_the_graph_itself_fails_natively_where_the_compiled_engine_fails_it(revision):
    """The session's liveness mutant that keeps running after it responded: ``settles`` (a
    ``reachable`` property) and ``no_deadlock`` (an ``unstuck`` one) fail on both engines with
    the same trace (to the first such state, then the walk from it) and loop."""
    compiled, ran = _agree(_session("atomic-runs-after-respond", revision))
    assert ran.verdicts["requests_answered"] == "holds"
    for name in ("settles", "no_deadlock"):
        assert ran.verdicts[name] == compiled.verdicts[name] == "fails"
        assert ran.traces[name] and ran.traces[name] == compiled.traces[name]
        assert ran.loops[name] and ran.loops[name] == compiled.loops[name]


def _counter(spin: bool):
    """``x`` counts 0..3 (``inc``); from 1 a ``reset`` (the first move) goes back to 0, and
    with ``spin`` the last state has a move that leaves it as it is.  Goal ``x == 0``:
    reachable from 0 and 1 only, and 3 is stuck (2 still moves)."""

    @reachable
    def back(b, s):
        """x is 0 again."""
        return s.x == 0

    @unstuck
    def moves(b, s):
        """x is 0 or some move changes it."""
        return s.x == 0

    acts = [
        Act("reset", (), lambda b, s: s.x == 1, lambda b, s: [Write("x", None, 0)], str),
        Act("inc", (), lambda b, s: s.x < 3, lambda b, s: [Write("x", None, s.x + 1)], str),
    ]
    if spin:
        acts.append(Act("spin", (), lambda b, s: s.x == 3, lambda b, s: [], str))
    return Spec("counter", "-", {}, (Var("x", 0, 3, 0),), tuple(acts), (back, moves), {})


@pytest.mark.parametrize("spin", [True, False])
def test_the_first_state_away_from_the_goal_and_the_walk_from_it_are_the_compiled_ones(spin):
    compiled, ran = _agree(_counter(spin))
    acts = {k: [st["action"] for st in ran.traces[k]] for k in ("back", "moves")}
    loops = {k: [st["action"] for st in ran.loops[k]] for k in ("back", "moves")}
    # no way back from x == 2: two steps there, then inc to the last state and its loop
    assert acts["back"] == ["inc", "inc", "inc"]
    assert acts["moves"] == ["inc", "inc", "inc"]  # stuck at x == 3
    assert loops == ({"back": ["spin"], "moves": ["spin"]} if spin else {"back": [], "moves": []})
    assert ran.deadlocks == compiled.deadlocks == (0 if spin else 1)


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        # every move counted as one that leaves the state as it is
        ("memcmp(p, q, NV)", "0", "moves"),
        # the goal reached from no state but itself
        ("if (!seen[from[e]])", "if (0)", "back"),
    ],
)
def test_c_that_judges_the_graph_wrongly_is_caught(monkeypatch, tmp_path, old, new, name):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    spec = _counter(True)
    compiled = explore(spec, engine="compiled")
    wrong_c(monkeypatch, old, new)
    ran = explore(spec, engine="native")
    assert ran.verdicts[name] == compiled.verdicts[name] == "fails"
    # x == 1 taken for the first state away from the goal: one step there, then round reset
    assert [st["action"] for st in ran.traces[name]] == ["inc"]
    assert [st["action"] for st in ran.loops[name]] == ["reset", "inc"]
    assert found(ran) != found(compiled)


def test_an_early_stop_and_a_state_limit_are_kept_as_the_compiled_engine_keeps_them():
    L = _model("lease")
    spec = L.spec("unfenced")
    until = _run("lease", "unfenced", "compiled").broken()[:1]
    _, ran = _agree(spec, until=until)
    assert not ran.complete and NOT_JUDGED in ran.verdicts.values()
    _, cut = _agree(spec, max_states=200)
    assert cut.states == 200 and not cut.complete and "bounds too large" in cut.errors[0]


def test_a_variable_wider_than_a_byte_is_refused_with_its_reason():
    spec = _model("subscriptions").spec("graceful-response")
    v = spec.vars[0]
    wide = replace(spec, vars=(Var(v.name, v.lo, 300, v.init, v.keys), *spec.vars[1:]))
    with pytest.raises(Refused, match=f"{v.name} ranges over {v.lo}..300, wider than a byte"):
        explore(wide, engine="native")
    assert issubclass(Refused, compiled_spec.Refused)
    # the compiled engine runs it
    assert explore(wide, engine="compiled").states > 1


def test_a_canon_not_from_ranks_is_refused_with_its_reason():
    # a canon that is the spec's ranks runs natively: tests/test_native_spec_ranks.py
    odd = replace(_model("lease").spec("fenced"))
    object.__setattr__(odd, "canon", lambda s: s)  # no spec declares one: set by hand
    for symmetry in (False, True):
        with pytest.raises(Refused, match="abstracts its states with a canon"):
            search_native(odd, symmetry=symmetry)


def test_a_write_to_a_none_key_stops_the_native_search_as_a_model_bug():
    L = _model("lease")
    spec = L.spec("fenced")
    coverage = _run("lease", "fenced", "compiled").coverage
    fires = next(a for a in spec.acts if coverage[a.name] > 0)
    var = next(v for v in spec.vars if v.keys is not None)

    def unmasked(b, s, **kw):
        k = b.Ite(getattr(s, var.name)[0] == getattr(s, var.name)[0], NONE, 0)
        return [*fires.effect(b, s, **kw), Write(var.name, k, var.lo)]

    odd = replace(
        spec, acts=tuple(replace(a, effect=unmasked) if a is fires else a for a in spec.acts)
    )
    with pytest.raises(NativeSpecError, match="model bug"):
        explore(odd, engine="native")


def test_a_trace_the_concrete_rules_do_not_retake_stops_the_run(monkeypatch):
    # C whose first move differs from the declared one: it also flips the last slot's low bit
    spec = _model("lease").spec("unfenced")
    real = native_spec.generate

    def skewed(sp, *args):
        gen = real(sp, *args)
        copy = "memcpy(q, p, NV);"
        assert copy in gen.source
        return replace(gen, source=gen.source.replace(copy, copy + " q[NV - 1] ^= 1;", 1))

    monkeypatch.setattr(native_spec, "generate", skewed)
    with pytest.raises(NativeSpecError, match="concrete"):
        search_native(spec)


def test_the_build_is_cached_by_its_source(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    spec = _model("subscriptions").spec("graceful-response")
    src = native_spec.generate(spec).source
    so = native_spec.build(src)
    assert so.parent == tmp_path / "native"
    mtime = so.stat().st_mtime_ns
    assert native_spec.build(src) == so and so.stat().st_mtime_ns == mtime
    ran = search_native(spec)
    assert ran.build_seconds > 0 and ran.search_seconds > 0
    assert ran.to_json()["engine"] == "native"


def test_a_spec_is_built_quick_until_a_search_of_it_lasts(monkeypatch, tmp_path):
    """Built first at -O0; once a search of it lasts more than ``PROMOTE_AFTER`` seconds, at
    -O1 too, in the background (the search does not wait for it), which its next runs load;
    the verdicts are the same either way."""
    from mcp_inflight.proofs.native_build import built_path as _built
    from mcp_inflight.proofs.native_build import compiler

    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    spec = _model("subscriptions").spec("graceful-response")
    src = native_spec.generate(spec).source
    quick, best = (
        _built(compiler(), f, src) for f in (native_spec.QUICK_CFLAGS, native_spec.CFLAGS)
    )
    monkeypatch.setattr(native_spec, "PROMOTE_AFTER", 1e9)
    first = search_native(spec)
    assert quick.exists() and not best.exists()
    monkeypatch.setattr(native_spec, "PROMOTE_AFTER", 0.0)
    second = search_native(spec)
    native_build.finish_builds(60)
    assert best.exists() and native_spec.build(src) == best
    quick.unlink()  # the next run loads the -O1 build and builds nothing
    third = search_native(spec)
    assert not quick.exists()
    assert found(first) == found(second) == found(third)


def test_the_declared_checker_runs_native_and_says_why_when_it_does_not(monkeypatch):
    from mcp_inflight.proofs import declared

    spec = _model("subscriptions").spec("graceful-response")
    ran = declared.explore(spec, engine="fastest")
    assert ran.engine == "native"
    assert found(ran) == found(_run("subscriptions", "graceful-response", "compiled"))
    v = spec.vars[0]
    wide = replace(spec, vars=(Var(v.name, v.lo, 300, v.init, v.keys), *spec.vars[1:]))
    fell = declared.explore(wide, engine="fastest")
    assert fell.engine.startswith("compiled (the native engine refused the spec: variable")
    assert found(fell) == found(explore(wide, engine="compiled"))
    monkeypatch.setattr(native_build, "available", lambda: False)
    assert (
        declared.explore(spec, engine="fastest").engine
        == "compiled (no C compiler for the native engine)"
    )


def test_the_packing_of_many_states_is_the_plain_one():
    """The generated packer an unfolding uses (one call of struct) packs as ``_pack`` does,
    a value wider than a signed byte included (it falls back to the plain reading)."""
    import random

    spec = _session("atomic", "2026-07-28")
    rnd = random.Random(5)

    def value(v, lo, hi):
        return (
            rnd.randint(lo, hi)
            if v.keys is None
            else tuple(rnd.randint(lo, hi) for _ in range(v.keys))
        )

    pack = native_spec._packer(spec)
    for lo, hi in ((-128, 127), (-300, 300)):
        for _ in range(200):
            s = spec.state_type(*[value(v, lo, hi) for v in spec.vars])
            assert pack(s) == native_spec._pack(spec, s)


def test_a_background_build_that_fails_leaves_nothing_behind(monkeypatch, tmp_path):
    """``native_build.build_later`` on C the compiler refuses: no shared object in the cache,
    no build directory left, and runs go on with the build they have."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    source = "this is not C\n"
    native_build.build_later(source, native_spec.CFLAGS)
    native_build.finish_builds(60)
    built = native_build.built_path(native_build.compiler(), native_spec.CFLAGS, source)
    assert not built.exists()
    assert list(native_build.cache_dir().iterdir()) == []
    good = native_spec.generate(_model("subscriptions").spec("graceful-response")).source
    native_build.build_later(good, native_spec.CFLAGS)
    native_build.finish_builds(60)
    assert native_build.built_path(native_build.compiler(), native_spec.CFLAGS, good).exists()
    assert [p.suffix for p in native_build.cache_dir().iterdir()] == [".so"]
