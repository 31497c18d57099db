"""The small models' first name for the one checker (``proofs/declared.py``): every name here is
the same object there (the explorer of ``proofs/explorer.py``, the prover of
``proofs/induction.py``)."""

from __future__ import annotations

from .declared import (
    Checked,
    Explored,
    Proved,
    check,
    cti_lines,
    drive,
    explore,
    path_to,
    prove,
    trace_text,
    transitions,
)

__all__ = [
    "Checked",
    "Explored",
    "Proved",
    "check",
    "cti_lines",
    "drive",
    "explore",
    "path_to",
    "prove",
    "trace_text",
    "transitions",
]
