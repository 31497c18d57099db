"""The one explorer's run of the session declaration, read as the session's run record
(``proofs/session_run.py``), equals the session engine's record (unreduced, compiled, liveness
judged), field for field in its JSON: states, transitions, coverage, every verdict with its
trace (rebuilt through the session's own step and told by the session's trace text), the
liveness lassos and where their loops start.  What is not yet the same: ``deadlocks``, which the
session counts among unsettled states only and the one explorer among all states with no move
(the declaration does not yet say where a run may end).
"""

from __future__ import annotations

import pytest

from mcp_inflight.model.config import Config, client_for, liveness_mutants
from mcp_inflight.model.session_spec import spec
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.session_run import run_result

DESIGNS = {**all_designs(), **liveness_mutants()}
#: not compared: the time, and the dead ends (see the module text)
APART = ("seconds", "deadlocks", "deadlock_trace")


def _records(design: str, revision: str, transport: str, ids: int) -> tuple[dict, dict]:
    cfg = Config(DESIGNS[design], revision, transport, ids, 2, client_for("reusing", revision))
    ref = explore(cfg, symmetry=False, progress=False, engine="compiled", liveness=True)
    mine = run_result(cfg, explore(spec(cfg)), False)
    a, b = ref.to_json(), mine.to_json()
    for k in APART:
        a.pop(k), b.pop(k)
    return a, b


@pytest.mark.parametrize(
    "design, revision, transport, ids",
    [
        ("atomic", "2026-07-28", "http", 2),
        ("unguarded", "2026-07-28", "stdio", 2),
        ("atomic-shared-registry", "2026-07-28", "http", 2),
        ("atomic-runs-after-respond", "2025-11-25", "stdio", 1),  # settles, no_deadlock fail
        ("atomic-waits-on-answer", "2025-11-25", "http", 1),  # requests_answered fails
    ],
)
def test_the_record_is_the_session_engines(design, revision, transport, ids):
    ref, mine = _records(design, revision, transport, ids)
    assert mine == ref
    failed = [v for kind in ("invariants", "liveness") for v in mine[kind] if not v.get("holds")]
    assert failed or design == "atomic"  # the mutants' failures are among what is compared


def test_a_trace_the_session_rules_do_not_take_stops_the_reading():
    cfg = Config(DESIGNS["atomic"], "2026-07-28", "http", 2, 2, client_for("reusing", "2026-07-28"))
    ex = explore(spec(cfg))
    ex.deadlock_trace = [{"action": "respond", "args": {"r": 0}}]  # nothing sent yet
    with pytest.raises(ValueError, match="not enabled"):
        run_result(cfg, ex, False)
