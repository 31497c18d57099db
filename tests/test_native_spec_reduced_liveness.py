"""Liveness under symmetry reduction on the declared models' native engine
(``proofs/native_spec.py`` with ``symmetry=True`` on a spec with liveness properties) against
the compiled engine's reduced run.

The native engine judges them as the compiled engine does: an ``eventually`` property by
``liveness.fair_violation_reduced`` on the reduced graph the C search kept, each component that
a run can go round in (a reduced state alone only when the C search saw it move to another
state of its own orbit) unfolded into the real states of its orbits (``Canon.group``) and the
real moves between them (the compiled rules, each successor's reduced state found by the C's own
least renaming and table); ``reachable`` and ``unstuck`` in C on the reduced graph, the run
after the first failing state walked from the real state its replayed trace ends in.

* Every lease design with its liveness kept, the lease without a ttl at two ids, the session
  declaration (2026-07-28 over HTTP at two ids and two instances, atomic) and its liveness
  mutants (2025-11-25 over stdio at one id, its send times kept by rank: one breaks
  ``requests_answered``; 2026-07-28 over HTTP at one id: another breaks ``settles`` and
  ``no_deadlock``): the native reduced run finds what the compiled reduced run finds, field by
  field (verdicts, traces, the lassos' loops), its traces and loops replayed as real runs.
* A baton passed between two holders, where weak fairness read on the representatives' move
  names gets the verdict wrong: judged on the real moves natively too; C whose table finds no
  real successor's reduced state (every real move read as leaving the component), or that
  marks no state as having a move to another state of its orbit (so that none is unfolded),
  gets it wrong, and the test sees it.
* ``fastest`` runs such a spec natively rather than falling back to the compiled engine.

The 2025-11-25 stdio mutant that breaks ``settles`` and ``no_deadlock`` is in the slow set.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_inflight.model import lease, lease_state
from mcp_inflight.model.config import DESIGNS, Config, client_for, liveness_mutants
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import native_build
from mcp_inflight.proofs.explorer import Explored, explore
from support.declared import baton, found, reduced, replays, wrong_c

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


def _session(design: str, revision: str, transport: str, ids: int) -> Spec:
    d = {**DESIGNS, **liveness_mutants()}[design]
    return session_spec(Config(d, revision, transport, ids, 2, client_for("reusing", revision)))


def agree(sp: Spec) -> Explored:
    """The native reduced run of ``sp`` is the compiled one, field by field, and each failing
    liveness property's trace and loop replay as a real run that never reaches the goal (a
    loop that comes back where it started; a ``reachable`` one may first leave its stem)."""
    compiled, ran = reduced(sp)
    assert ran.engine == "native" and compiled.engine == "compiled"
    assert ran.symmetry == compiled.symmetry and ran.symmetry.startswith("reduced: ")
    assert found(ran) == found(compiled)
    assert not ran.errors
    b = sp.logic()
    for p in sp.props:
        if p.kind != "liveness" or ran.verdicts[p.name] != "fails":
            continue
        path = replays(sp, ran.traces[p.name])
        loop = replays(sp, ran.loops[p.name], path[-1])
        assert loop[-1] == path[-1] or not ran.loops[p.name]
        assert not any(p.fn(b, s) for s in path[-1:] + loop)
    return ran


LEASE = {
    **{d: (lambda d=d: lease.spec(d)) for d in lease_state.DESIGNS},
    "no-ttl-2-ids": lambda: lease.spec("no-ttl", ids=2),
}


@pytest.mark.parametrize("name", list(LEASE))
def test_the_lease_with_its_liveness_reduces_natively_as_compiled(name: str) -> None:
    sp = LEASE[name]()
    assert any(p.kind == "liveness" for p in sp.props)
    ran = agree(sp)
    if name.startswith("no-ttl"):
        assert ran.verdicts["ids_free_after_lease"] == "fails" and ran.loops["ids_free_after_lease"]


def test_the_session_with_its_liveness_reduces_natively_as_compiled() -> None:
    ran = agree(_session("atomic", "2026-07-28", "http", 2))
    live = {"requests_answered", "settles", "no_deadlock"}
    assert {k: ran.verdicts[k] for k in live} == dict.fromkeys(live, "holds")


@pytest.mark.parametrize(
    ("design", "revision", "transport", "broken"),
    [
        ("atomic-waits-on-answer", "2025-11-25", "stdio", {"requests_answered"}),
        ("atomic-runs-after-respond", "2026-07-28", "http", {"settles", "no_deadlock"}),
        pytest.param(
            "atomic-runs-after-respond",
            "2025-11-25",
            "stdio",
            {"settles", "no_deadlock"},
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_session_liveness_mutant_fails_natively_under_reduction_as_compiled(
    design: str, revision: str, transport: str, broken: set[str]
) -> None:
    ran = agree(_session(design, revision, transport, 1))
    live = ("requests_answered", "settles", "no_deadlock")
    assert {k for k in live if ran.verdicts[k] == "fails"} == broken
    assert all(k in ran.loops for k in broken)  # a lasso each (its loop may be empty)


# --- the unfolding decides, and the test sees C that gets it wrong ----------------------------


def test_the_baton_is_judged_on_its_real_moves_natively() -> None:
    ran = agree(baton())
    assert ran.verdicts["done"] == "fails" and ran.traces["done"] == []
    # one orbit, two real states: the loop passes the baton there and back
    assert [st["action"] for st in ran.loops["done"]] == ["pass", "pass"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # nb_find answering -1 for every state: each real move of the unfolded orbit reads as
        # leaving it, and the real states fall apart into components a fair run must leave
        (
            "    canon((const sc *)s, c);\n",
            "    canon((const sc *)s, c);\n    (void)r; return -1;\n",
        ),
        # no state said to have a move to another state of its orbit: the orbit is judged on
        # its representative, where finish is enabled and never taken
        ("r->renamed[i] = 1;", "r->renamed[i] = 0;"),
        # every component judged in C on its representatives, none handed out to be unfolded
        ("if (firsts && (size > 1 || r->renamed[v])) {", "if (firsts && 0) {"),
    ],
    ids=["no-successor-found", "no-move-within-an-orbit", "nothing-unfolded"],
)
def test_c_that_unfolds_wrongly_gets_the_baton_wrong(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, old: str, new: str
) -> None:
    """The native run then says the goal holds where the compiled run says it fails."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    wrong_c(monkeypatch, old, new)
    compiled = explore(baton(), symmetry=True, engine="compiled")
    ran = explore(baton(), symmetry=True, engine="native")
    assert compiled.verdicts["done"] == "fails" and ran.verdicts["done"] == "holds"


def test_fastest_runs_liveness_under_reduction_natively() -> None:
    ran = explore(lease.spec("no-ttl"), engine="fastest", symmetry=True)
    assert ran.engine == "native" and ran.symmetry.startswith("reduced: ")
