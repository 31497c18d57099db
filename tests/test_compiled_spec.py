"""The one explorer's compiled engine (``proofs/compiled_spec.py``) against the concrete logic.

The compiled engine is what ``check`` runs for every declared model, so it must find exactly
what the concrete reading of the rules finds: the same states, transitions, depth, verdicts,
shortest traces (each step's story and changes), coverage and errors, on every design and
mutant of every model.  A rule the generator cannot read is refused, never guessed: ``auto``
then runs concretely and says why."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from mcp_inflight.model.logic import NONE, Write
from mcp_inflight.proofs.compiled_spec import Refused, compile_spec
from mcp_inflight.proofs.explored import Explored
from mcp_inflight.proofs.explorer import explore
from support.declared import MODELS, found
from support.declared import model as _model


def _agree(spec, compiled=None) -> None:
    """The compiled engine's run of ``spec`` (``compiled``, where one was already made) finds
    what the concrete one finds."""
    if compiled is None:
        compiled = explore(spec, engine="compiled")
    concrete = explore(spec, engine="concrete")
    assert compiled.engine == "compiled" and concrete.engine == "concrete"
    assert compiled.states > 1
    assert found(compiled) == found(concrete)


#: the default run: every design of the cheap models at their default bounds; the tasks model
#: (3-9 s a design concretely) at one request, and whole in the slow run below
CASES = [(m, d, {"requests": 1} if m == "tasks" else {}) for m in MODELS for d in _model(m).DESIGNS]


@cache
def _by_default(model: str, design: str) -> Explored:
    """``explore``'s run of a declared model's design at its default bounds on the default
    engine (the compiled one, as the test below checks, and so the run ``engine="compiled"``
    makes), shared by the tests here that read it."""
    return explore(_model(model).spec(design))


def _shared(model: str, design: str, bounds: dict[str, int]) -> Explored | None:
    """The compiled run of ``model``'s ``design`` at ``bounds`` that this module's tests
    share, where there is one (its first design at the default bounds), else None."""
    if bounds or design != next(iter(_model(model).DESIGNS)):
        return None
    return _by_default(model, design)


@pytest.mark.parametrize(
    ("model", "design", "bounds"), CASES, ids=[f"{m}-{d}" for m, d, _ in CASES]
)
def test_the_compiled_engine_finds_what_the_concrete_rules_find(model, design, bounds):
    _agree(_model(model).spec(design, **bounds), _shared(model, design, bounds))


@pytest.mark.slow
@pytest.mark.parametrize("design", list(_model("tasks").DESIGNS))
def test_the_compiled_engine_agrees_on_the_tasks_model_at_its_default_bounds(design):
    _agree(_model("tasks").spec(design), _shared("tasks", design, {}))


@pytest.mark.slow
@pytest.mark.parametrize("design", ["atomic", "unguarded", "check_then_claim"])
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_compiled_engine_agrees_on_the_session_declaration(design, revision, transport):
    from mcp_inflight.model.config import DESIGNS, Config, client_for
    from mcp_inflight.model.session_spec import spec

    cfg = Config(DESIGNS[design], revision, transport, 1, 2, client_for("reusing", revision))
    _agree(spec(cfg))


def test_every_declared_model_runs_compiled_by_default():
    for name in MODELS:
        ex = _by_default(name, next(iter(_model(name).DESIGNS)))
        assert ex.engine == "compiled", (name, ex.engine)


def _lease_with(**acts):
    """The lease model with actions replaced by name."""
    L = _model("lease")
    spec = L.spec("fenced")
    return replace(spec, acts=tuple(acts.get(a.name, a) for a in spec.acts)), L


def test_a_rule_that_branches_on_a_state_value_is_refused_and_run_concretely():
    spec, _ = _lease_with()
    act = spec.acts[0]

    def branching(b, s, **kw):
        if s.fence == 0:  # a Python if on a state value: the declaration forbids it
            return act.guard(b, s, **kw)
        return False

    odd = replace(spec, acts=(replace(act, guard=branching), *spec.acts[1:]))
    with pytest.raises(Refused, match="branched"):
        compile_spec(odd)
    with pytest.raises(Refused):
        explore(odd, engine="compiled")
    ran = explore(odd)
    assert ran.engine.startswith("concrete (the generator refused a rule")
    assert found(ran) == found(explore(odd, engine="concrete"))


def test_a_write_to_a_none_key_is_a_model_bug_on_both_engines():
    spec, _ = _lease_with()
    fires = next(a for a in spec.acts if _by_default("lease", "fenced").coverage[a.name] > 0)
    var = next(v for v in spec.vars if v.keys is not None)

    def unmasked(b, s, **kw):
        # a key read from the state that is NONE on every state: no write guards against it
        k = b.Ite(getattr(s, var.name)[0] == getattr(s, var.name)[0], NONE, 0)
        return [*fires.effect(b, s, **kw), Write(var.name, k, var.lo)]

    def constant(b, s, **kw):
        return [*fires.effect(b, s, **kw), Write(var.name, NONE, var.lo)]

    odd = replace(
        spec, acts=tuple(replace(a, effect=unmasked) if a is fires else a for a in spec.acts)
    )
    for engine in ("compiled", "concrete"):
        with pytest.raises(ValueError, match="unmasked NONE key"):
            explore(odd, engine=engine)
    # a constant NONE key is seen when the rule is generated
    folded = replace(
        spec, acts=tuple(replace(a, effect=constant) if a is fires else a for a in spec.acts)
    )
    with pytest.raises(Refused, match="NONE key"):
        compile_spec(folded)
    with pytest.raises(ValueError, match="unmasked NONE key"):
        explore(folded, engine="concrete")


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="unknown engine"):
        explore(_model("subscriptions").spec("graceful-response"), engine="turbo")
