"""The native engine (C generated from model/) against the Python engine, without symmetry.

Counts, verdicts, coverage, deadlocks and every trace (so shortest-trace lengths) must be equal:
the C side searches in the same order and its traces are replayed through ``model/step.py``.
"""

import pytest

from mcp_inflight.model import DESIGNS, Config, mutants, profiles
from mcp_inflight.proofs import native
from mcp_inflight.proofs.explore import explore

pytestmark = pytest.mark.skipif(not native.available(), reason="no C compiler")


def _same(cfg, max_states=None):
    a = explore(cfg, symmetry=False, progress=False, max_states=max_states).to_json()
    b = explore(
        cfg, symmetry=False, progress=False, max_states=max_states, engine="native"
    ).to_json()
    a.pop("seconds")
    b.pop("seconds")
    assert b == a, cfg.label


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    """A cache directory of this test session (the built objects are reused within it)."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize(
    "design,rev,tr",
    [
        ("unguarded", "2025-11-25", "http"),
        ("check_then_claim", "2026-07-28", "stdio"),
    ],
)
def test_native_equals_python_engine(design, rev, tr):
    _same(Config(DESIGNS[design], rev, tr, ids=2, requests=2))


def test_native_equals_python_engine_when_cut_short():
    _same(Config(DESIGNS["atomic"], "2025-11-25", "stdio", ids=2, requests=2), max_states=3000)


def test_native_refuses_symmetry():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", ids=1, requests=1)
    with pytest.raises(ValueError, match="without symmetry"):
        explore(cfg, progress=False, engine="native")


def test_native_build_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    src = native.Generated(Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 1)).source
    so = native.build(src)
    assert so.parent == tmp_path / "native"
    mtime = so.stat().st_mtime_ns
    assert native.build(src) == so and so.stat().st_mtime_ns == mtime


@pytest.mark.slow
@pytest.mark.parametrize("design", list(DESIGNS) + list(mutants()))
@pytest.mark.parametrize("rev,tr", profiles("all", "all"))
def test_native_equals_python_engine_everywhere(design, rev, tr):
    known = {**DESIGNS, **mutants()}
    _same(Config(known[design], rev, tr, ids=2, requests=2))
