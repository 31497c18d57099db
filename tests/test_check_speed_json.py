"""``check``'s fast paths (the symmetry check on flat states, the prover started beside the
explorer) change no verdict: ``check --json --no-cache`` gives the same cells, runs and proofs,
seconds aside, as with ``MCP_INFLIGHT_REFERENCE=1``, which takes the reference paths (the
interpreted symmetry check, the prover after the explorer)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_inflight.cli import main

#: what differs between two runs of the same check: how long things took, and how many solver
#: queries the prover asked (whether a quick first attempt comes back at once depends on the
#: terms the process made before, which differ between a fresh process and this one; when it
#: does not, the obligation is asked again in full, so every verdict is the same either way)
TIMED = {
    "seconds",
    "slowest_query",
    "elapsed",
    "rate",
    "build_seconds",
    "search_seconds",
    "queries",
}


def _untimed(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k not in TIMED}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def _check_json(argv: list[str], capsys: Any) -> dict:
    code = main(["check", "--json", "--no-cache", "--no-progress", *argv])
    doc = json.loads(capsys.readouterr().out)
    assert code == (0 if doc["ok"] else 1)
    return _untimed(doc)


def _both(argv: list[str], capsys: Any, monkeypatch: Any, tmp_path: Any) -> tuple[dict, dict]:
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    fast = _check_json(argv, capsys)
    monkeypatch.setenv("MCP_INFLIGHT_REFERENCE", "1")
    reference = _check_json(argv, capsys)
    return fast, reference


def test_the_fast_paths_give_the_reference_verdicts(capsys, monkeypatch, tmp_path):
    # one configuration: the reference proves it in this process after the explorer, the fast
    # path in a fresh process started before it
    argv = ["--model", "session", "--revision", "2026-07-28", "--transport", "http"]
    fast, reference = _both([*argv, "--no-sensitivity"], capsys, monkeypatch, tmp_path)
    assert fast["ok"] and fast["runs"][0]["prover"] and fast["results"]
    assert fast == reference


@pytest.mark.slow
def test_the_fast_paths_give_the_reference_verdicts_on_two_profiles(capsys, monkeypatch, tmp_path):
    argv = ["--model", "session", "--revision", "2026-07-28", "--no-sensitivity"]
    fast, reference = _both(argv, capsys, monkeypatch, tmp_path)
    assert fast["ok"] and fast["runs"] and fast["results"]
    assert fast == reference


def test_a_broken_symmetry_is_reported_alike_on_both_paths(
    capsys, monkeypatch, tmp_path, fresh_tables
):
    from mcp_inflight.model import session_conditions as S
    from mcp_inflight.model.logic import NONE

    # a claim that guards every id but 1: the symmetry check names it and the explorer runs
    # unreduced and finds the duplicate (the prover runs in fresh processes, which read the
    # model as written, not this test's patch: left out)
    monkeypatch.setitem(
        S.CONDITIONS,
        "claim_ok",
        lambda b, s, c, r, i: b.Or(s.inflight[s.rid[r]] == NONE, s.rid[r] == 1),
    )
    argv = ["--model", "session", "--revision", "2026-07-28", "--transport", "stdio"]
    fast, reference = _both(
        [*argv, "--no-sensitivity", "--no-prove"], capsys, monkeypatch, tmp_path
    )
    assert not fast["ok"]
    sym = [c for c in fast["results"] if c["property"] == "symmetric_in_ids_and_instances"]
    assert sym and not sym[0]["passed"]
    assert fast == reference


@pytest.mark.slow
def test_the_default_check_gives_the_reference_verdicts(capsys, monkeypatch, tmp_path):
    fast, reference = _both([], capsys, monkeypatch, tmp_path)
    assert fast["ok"]
    assert fast == reference
