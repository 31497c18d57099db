"""The declared models as the engine-agreement tests take them: their names, their modules, and
what two engines' runs of one are compared on."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

MODELS = ("lease", "rounds", "resume", "tasks", "subscriptions")


def model(name: str) -> ModuleType:
    """The module of the declared model ``name`` (``mcp_inflight.model.<name>``)."""
    return importlib.import_module(f"mcp_inflight.model.{name}")


def found(ex: Any) -> tuple[Any, ...]:
    """What two engines must find alike on one spec: counts, depth, verdicts, shortest traces
    and the loops of liveness failures' lassos, coverage and dead actions, errors,
    completeness and deadlocks."""
    return (
        ex.states,
        ex.transitions,
        ex.depth,
        ex.verdicts,
        ex.traces,
        ex.loops,
        ex.coverage,
        ex.dead_actions,
        ex.errors,
        ex.complete,
        ex.deadlocks,
        ex.deadlock_trace,
    )
