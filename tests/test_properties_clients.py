"""The id rule per revision, proved: with the client 2025-11-25 asks for (never an id twice in a
session) the stale-cancel hazard is proved for any number of requests, and the proof needs the
fact that makes that client what it is."""

import pytest

from mcp_inflight.model import ATOMIC, AUXILIARY, Config
from mcp_inflight.proofs.prove import Prover


@pytest.mark.slow
def test_stale_cancel_is_proved_with_the_fresh_client_and_needs_its_id_rule():
    cfg = Config(ATOMIC, "2025-11-25", "http", client="fresh")
    p = Prover(cfg).run(["stale_cancel_is_inert"]).proof("stale_cancel_is_inert")
    assert p.proved and p.method == "induction"
    assert "client_ids_fresh" in p.auxiliary
    without = tuple(a for a in AUXILIARY if a.name != "client_ids_fresh")
    # induction fails without it; the bounded search after it (kept short here) finds no trace
    q = Prover(cfg, depth=2, auxiliary=without).run(["stale_cancel_is_inert"])
    assert not q.proof("stale_cancel_is_inert").proved
