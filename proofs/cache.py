"""The checkers' cache on disk: built engines and finished proofs, keyed by what made them.

Everything lives under one directory (``MCP_INFLIGHT_CACHE``, else
``$XDG_CACHE_HOME/mcp-inflight``, else ``~/.cache/mcp-inflight``): the native engine's shared
objects in ``native/`` (keyed by a hash of their C source, ``proofs/native_build.py``) and the
prover's results in ``proofs/`` (keyed by :func:`source_key`: a hash of the source of the model
and of the checkers, so any change to a rule, a property or the prover makes a new key, and of
the z3 version and the run's parameters).  Entries are written atomically (a temporary file
renamed), so concurrent runs never read half an entry; an entry that cannot be read is
ignored.  Deleting the directory is always safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import tempfile
from functools import cache
from pathlib import Path
from typing import Any


def root() -> Path:
    return Path(
        os.environ.get("MCP_INFLIGHT_CACHE")
        or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "mcp-inflight",
        )
    )


@cache
def _sources() -> str:
    """A hash of every Python source of the model and of the checkers."""
    from mcp_inflight import model, proofs

    h = hashlib.sha256()
    for pkg in (model, proofs):
        assert pkg.__file__ is not None
        base = Path(pkg.__file__).parent
        for f in sorted(base.rglob("*.py")):
            h.update(str(f.relative_to(base)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def source_key(*parts: object) -> str:
    """A key for a result computed from the model's and the checkers' source and ``parts``
    (each rendered by :func:`stable`, so the same parts give the same key in every process)."""
    import z3

    text = "\0".join([_sources(), z3.get_full_version(), *map(stable, parts)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def stable(x: object) -> str:
    """``repr(x)`` with every set's members and every dict's items in sorted order.  A set's
    ``repr`` follows its hash order, and a string's hash differs between processes
    (``PYTHONHASHSEED``), so a key made of ``repr`` of a configuration holding a frozenset
    differs from run to run and the cache would never be read back."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        inner = ", ".join(
            f"{f.name}={stable(getattr(x, f.name))}" for f in dataclasses.fields(x) if f.compare
        )  # the fields that make its equality: equal values, one key
        return f"{type(x).__qualname__}({inner})"
    if isinstance(x, set | frozenset):
        return "{" + ", ".join(sorted(stable(v) for v in x)) + "}"
    if isinstance(x, dict):
        return "{" + ", ".join(sorted(f"{stable(k)}: {stable(v)}" for k, v in x.items())) + "}"
    if isinstance(x, list):
        return "[" + ", ".join(map(stable, x)) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(map(stable, x)) + ")"
    text = repr(x)
    if " at 0x" in text:  # an object's address: never the same twice
        raise ValueError(f"no stable key for {text}")
    return text


def load(kind: str, key: str) -> Any | None:
    path = root() / kind / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # absent, unreadable or from another version: computed afresh
        return None


def store(kind: str, key: str, value: Any) -> None:
    d = root() / kind
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, delete=False, suffix=".tmp") as f:
            pickle.dump(value, f)
        os.replace(f.name, d / f"{key}.pickle")
    except OSError:  # a read-only cache only costs time
        pass
