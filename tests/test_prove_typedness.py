"""The session prover proves typedness rather than assuming it (``in_range``): every slot keeps
a value of its field's range after every action, and every other verdict rests on that."""

from __future__ import annotations

import json
from dataclasses import replace

from mcp_inflight.model.config import DESIGNS, Config
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import prove as P
from mcp_inflight.proofs.outcome import session_cells
from mcp_inflight.proofs.prove import Prover


def _cfg() -> Config:
    return Config(DESIGNS["atomic"], "2026-07-28", "http")


def test_in_range_is_proved_and_reported_on_the_safe_design():
    res = Prover(_cfg()).run()
    assert res.ok and res.in_range is not None and res.in_range.status == "proved"
    assert json.loads(json.dumps(res.to_json()))["in_range"]["proof"]["status"] == "proved"
    (cell,) = [c for c in session_cells(None, [res]) if c.prop == "in_range"]
    assert cell.passed and str(cell.word) == "proved"


def test_a_write_out_of_its_range_fails_in_range_and_the_run(monkeypatch):
    """``admit`` also writes 99 into its request's lifecycle (no lifecycle has that value):
    typedness is not proved, with its counterexample on ``admit``, and the run fails."""
    real = P.session_spec

    def broken(cfg: Config):
        sp = real(cfg)

        def bad(a):
            if a.name != "admit":
                return a
            effect = a.effect
            return replace(
                a, effect=lambda b, s, **kw: [*effect(b, s, **kw), Write("life", kw["r"], 99)]
            )

        return replace(sp, acts=tuple(bad(a) for a in sp.acts))

    monkeypatch.setattr(P, "session_spec", broken)
    res = Prover(_cfg()).run()
    assert res.in_range is not None and res.in_range.status == "cti"
    assert res.in_range.cti is not None and res.in_range.cti.action == "admit"
    assert not res.ok
    (cell,) = [c for c in session_cells(None, [res]) if c.prop == "in_range"]
    assert not cell.passed and str(cell.word) == "not proved"
