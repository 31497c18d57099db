"""mypy checks the whole package through ``typecheck/mcp_inflight``: the package as installed,
made of links (see ``[tool.mypy]`` in pyproject.toml).  The links must follow the tree: a module
added to ``mcp_inflight/`` without its link would go unchecked."""

from __future__ import annotations

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINKS = ROOT / "typecheck" / "mcp_inflight"
MAPPED = {"model": ROOT / "model", "proofs": ROOT / "proofs", "impl": ROOT / "impl"}


def expected() -> dict[str, pathlib.Path]:
    out = {
        p.name: p
        for p in (ROOT / "mcp_inflight").iterdir()
        if p.name != "__pycache__" and not p.name.endswith(".pyc")
    }
    return {**out, **MAPPED}


def test_every_entry_of_the_package_has_its_link():
    want = expected()
    have = {p.name: p for p in LINKS.iterdir()}
    assert sorted(have) == sorted(want)
    for name, link in have.items():
        assert link.is_symlink(), name
        assert link.resolve() == want[name].resolve(), name


def test_mypy_reads_the_linked_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["typecheck/mcp_inflight"]
    assert config["disallow_untyped_defs"] is True


def test_no_module_of_the_package_is_exempt():
    """Every module is checked: no override silences a module's errors or lets it go
    unannotated (the generated core is read silently, and checked against the model instead)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    for o in config.get("overrides", []):
        mods = o["module"] if isinstance(o["module"], list) else [o["module"]]
        assert not o.get("ignore_errors"), mods
        assert o.get("disallow_untyped_defs", True) is True, mods
        if o.get("follow_imports") == "silent":
            assert mods == ["mcp_inflight.impl.generated"], mods
