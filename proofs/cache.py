"""The checkers' cache on disk: built engines and finished proofs, keyed by what made them.

Everything lives under one directory (``MCP_INFLIGHT_CACHE``, else
``$XDG_CACHE_HOME/mcp-inflight``, else ``~/.cache/mcp-inflight``): the native engine's shared
objects in ``native/`` (keyed by a hash of their C source, ``proofs/native.py``) and the
prover's results in ``proofs/`` (keyed by :func:`source_key`: a hash of the source of the model
and of the checkers, so any change to a rule, a property or the prover makes a new key, and of
the z3 version and the run's parameters).  Entries are written atomically (a temporary file
renamed), so concurrent runs never read half an entry; an entry that cannot be read is
ignored.  Deleting the directory is always safe.
"""

from __future__ import annotations

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
    """A key for a result computed from the model's and the checkers' source and ``parts``."""
    import z3

    text = "\0".join([_sources(), z3.get_full_version(), *map(repr, parts)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


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
