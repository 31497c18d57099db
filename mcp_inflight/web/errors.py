"""The one error of a query the pages cannot answer (``views`` and ``declared_api`` raise it;
the server answers 400 with its message and, for a path, the step), and the reading of a
query's whole numbers, which raises it."""

from __future__ import annotations

from collections.abc import Mapping


class BadRequest(ValueError):
    """A query the page cannot answer (unknown name, bad number, a path that does not replay)."""

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message)
        self.step = step


def query_int(q: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    """The whole number ``q[name]`` (``default`` when absent or empty), between ``lo`` and
    ``hi``; else :class:`BadRequest` naming the parameter."""
    raw = q.get(name)
    if raw is None or raw == "":
        return default
    try:
        n = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, not {raw!r}") from None
    if not lo <= n <= hi:
        raise BadRequest(f"{name} must be between {lo} and {hi}, not {n}")
    return n
