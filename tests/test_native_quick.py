"""The native engine builds a search at ``check``'s default bound (or with symmetry at two
instances and three ids) quickly (gcc -O0) and a larger one optimised; both builds find the same states, verdicts and traces, and a quick build
takes the optimised shared object when that one is cached already."""

from __future__ import annotations

import pytest

from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.proofs import native, native_build

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")

SMALL = Config(DESIGNS["atomic"], "2026-07-28", "http", 2, 2)


def test_the_default_bound_builds_quickly_and_a_larger_one_optimised():
    assert native.flags_for(SMALL) == native_build.QUICK_CFLAGS
    assert native.flags_for(Config(DESIGNS["atomic"], "2026-07-28", "http", 2, 3)) == (
        native_build.CFLAGS
    )
    assert native_build.QUICK_CFLAGS != native_build.CFLAGS
    three_ids = Config(DESIGNS["atomic"], "2025-11-25", "http", 3, 2)
    assert native.flags_for(three_ids, symmetry=True) == native_build.QUICK_CFLAGS
    assert native.flags_for(three_ids, symmetry=False) == native_build.CFLAGS


def test_a_quick_build_takes_a_cached_optimised_one(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    src = native.Generated(Config(DESIGNS["atomic"], "2026-07-28", "http", 1, 1)).source
    quick = native_build.build(src, native_build.QUICK_CFLAGS)
    assert len(list((tmp_path / "native").glob("*.so"))) == 1  # no optimised build made
    best = native_build.build(src)
    assert best != quick
    assert native_build.build(src, native_build.QUICK_CFLAGS) == best


def test_quick_and_optimised_builds_find_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    cfg = Config(DESIGNS["check_then_claim"], "2026-07-28", "http", 2, 2)
    found = []
    for flags in (native_build.QUICK_CFLAGS, native_build.CFLAGS):
        monkeypatch.setattr(native, "flags_for", lambda c, symmetry=False, f=flags: f)
        r = native.search_native(cfg, symmetry=True)
        doc = r.to_json()
        doc.pop("seconds", None)
        found.append(doc)
    assert len(list((tmp_path / "native").glob("*.so"))) == 2
    assert found[0] == found[1]
    assert found[0]["ok"] is False  # it breaks no_orphan: the traces are compared too
