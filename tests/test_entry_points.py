"""One entry point to explore every model and one to prove it (``proofs/explorer.py:explore``,
``proofs/prove.py:prove``): each takes a declared model's ``Spec`` or the session's ``Config``,
refuses the other kind's options, and is the only function of its name in ``proofs/``."""

from __future__ import annotations

import ast
import pathlib

import pytest

from mcp_inflight.model import rounds
from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.proofs import native_build
from mcp_inflight.proofs.explored import Explored, progress_to
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.induction import Proved
from mcp_inflight.proofs.prove import prove
from mcp_inflight.proofs.records import ProveResult, RunResult

PROOFS = pathlib.Path(__file__).resolve().parent.parent / "proofs"
TINY = {"calls": 1, "questions": 1, "max_rounds": 1, "tokens": 2}


def _entries(name: str) -> list[str]:
    """The modules of ``proofs/`` defining a module-level function ``name`` (its ``@overload``
    signatures aside)."""
    out = []
    for f in sorted(PROOFS.glob("*.py")):
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                overload = any(
                    isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list
                )
                if not overload:
                    out.append(f.name)
    return out


def test_one_explore_and_one_prove_in_the_checkers():
    assert _entries("explore") == ["explorer.py"]
    assert _entries("prove") == ["prove.py"]


def test_each_model_kind_comes_back_as_its_record():
    spec = rounds.spec("sealed", **TINY)
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http")
    ex, run = explore(spec), explore(cfg, progress=False)
    assert isinstance(ex, Explored) and ex.ok and ex.states > 1
    assert isinstance(run, RunResult) and run.ok and run.states > 1
    proved, proof = prove(spec), prove(cfg)
    assert isinstance(proved, Proved) and proved.verdicts["in_range"] == "proved"
    assert isinstance(proof, ProveResult) and proof.in_range is not None
    assert proof.in_range.status == "proved"


def test_the_other_kinds_options_are_refused():
    spec = rounds.spec("sealed", **TINY)
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http")
    with pytest.raises(TypeError, match="session model"):
        explore(spec, liveness=True)
    with pytest.raises(TypeError, match="declared models"):
        explore(cfg, until=["no_misrouted_response"])


def test_progress_off_is_silent_even_beside_a_default_sink(capfd):
    """``progress=False`` means no progress for a declared model as for the session, even where
    the process has a default sink (``check`` sets one for the declared models)."""
    spec = rounds.spec("sealed", **TINY)
    seen: list[object] = []

    class Recorder:
        def update(self, snap: object) -> None:
            seen.append(snap)

    progress_to(Recorder())
    try:
        explore(spec, engine="compiled")
        assert seen, "the default sink hears a run not told otherwise"
        seen.clear()
        explore(spec, engine="compiled", progress=False)
        assert seen == []
    finally:
        progress_to(None)
    explore(Config(DESIGNS["atomic"], "2026-07-28", "http"), progress=False)
    assert capfd.readouterr().err == ""


def test_progress_on_shows_a_declared_models_run_on_stderr(capfd):
    """``progress=True`` draws a declared model's run on stderr as it does the session's: at
    least the line that says the run is done, with its states."""
    spec = rounds.spec("sealed", **TINY)
    for engine in ("compiled", "fastest"):
        ran = explore(spec, engine=engine, progress=True)
        err = capfd.readouterr().err
        assert "done" in err and f"{ran.states:,} states" in err, (engine, err)


def test_fastest_takes_the_native_engine_where_it_runs():
    spec = rounds.spec("sealed", **TINY)
    ran = explore(spec, engine="fastest")
    if native_build.available():
        assert ran.engine.startswith("native")
    else:
        assert ran.engine.endswith("(no C compiler for the native engine)")
    plain = explore(spec, engine="compiled")
    assert (ran.states, ran.transitions, ran.verdicts) == (
        plain.states,
        plain.transitions,
        plain.verdicts,
    )
