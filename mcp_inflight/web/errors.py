"""The one error of a query the pages cannot answer (``views`` and ``declared_api`` raise it;
the server answers 400 with its message and, for a path, the step)."""

from __future__ import annotations


class BadRequest(ValueError):
    """A query the page cannot answer (unknown name, bad number, a path that does not replay)."""

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message)
        self.step = step
