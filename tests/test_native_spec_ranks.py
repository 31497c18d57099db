"""Send times kept by rank (``model/declare.py:Ranks``) on the declared models' native engine:
the session declaration over stdio, whose ``canon`` is its ranks, runs in C
(``proofs/native_spec_c.py`` generates ``ranks``, applied after every move's writes and to the
initial state, and after each renaming of the least-renaming search).

* 2026-07-28 over stdio at two ids and two instances, atomic and unguarded: the native run finds
  what the compiled run finds, field by field, unreduced and reduced (liveness dropped there:
  judged under reduction, over stdio too, in ``tests/test_native_spec_reduced_liveness.py``),
  each trace replayed
  through the concrete rules; the 2025-11-25 profile at the same bounds is in the slow set.
* The liveness mutant at 2025-11-25 over stdio, one id, that breaks ``settles`` and
  ``no_deadlock``: the same verdicts, traces and loops.
* The C ranks are ``Ranks.function``, and the C least renaming (ranks after each renaming) is
  ``declared_symmetry.Canon``, on random states of every variable's range.
* The comparison can fail: C that skips the ranks after a move's writes keeps states the
  concrete rules do not reach (the first trace rebuilt stops the run), and C that breaks ties
  between equal times the other way, or does not rank after a renaming, is not Python's on
  random states.
"""

from __future__ import annotations

import ctypes
import dataclasses
from functools import cache
from typing import Any

import pytest

from mcp_inflight.model.config import DESIGNS, Config, client_for, liveness_mutants
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import declared_symmetry as ds
from mcp_inflight.proofs import native_build, native_spec, native_spec_c
from mcp_inflight.proofs.explorer import Explored, explore
from mcp_inflight.proofs.native_spec import NativeSpecError
from support.declared import agree, random_states, reduced, replays, wrong_c

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


def _stdio(design: str, revision: str = "2026-07-28", ids: int = 2) -> Spec:
    d = {**DESIGNS, **liveness_mutants()}[design]
    return session_spec(Config(d, revision, "stdio", ids, 2, client_for("reusing", revision)))


def safety(sp: Spec) -> Spec:
    """``sp`` without its liveness properties (judged under reduction in
    ``tests/test_native_spec_reduced_liveness.py``)."""
    return dataclasses.replace(sp, props=tuple(p for p in sp.props if p.kind != "liveness"))


@cache
def unreduced(design: str, revision: str = "2026-07-28") -> tuple[Explored, Explored]:
    """The compiled and native runs of the stdio session at ``design`` (shared: only read)."""
    sp = _stdio(design, revision)
    return explore(sp, engine="compiled"), explore(sp, engine="native")


@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_the_stdio_session_runs_natively_as_compiled(design: str) -> None:
    compiled, ran = unreduced(design)
    agree(compiled, ran)
    assert ran.traces  # the witnesses' traces at least, each taken through the ranks
    for steps in [*ran.traces.values(), ran.deadlock_trace or []]:
        replays(_stdio(design), steps)


#: unguarded reduced in the slow set: its symmetry check is most of 2.5 s of CPU, and its
#: declaration, so its least renaming in C, is atomic's (the mutant runs unreduced above)
@pytest.mark.parametrize("design", ["atomic", pytest.param("unguarded", marks=pytest.mark.slow)])
def test_the_stdio_session_reduces_natively_as_compiled(design: str) -> None:
    sp = safety(_stdio(design))
    compiled, ran = reduced(sp)
    assert ran.symmetry.startswith("reduced: ")
    agree(compiled, ran)
    assert ran.states < unreduced(design)[1].states
    for steps in ran.traces.values():
        replays(sp, steps)


def test_a_liveness_mutant_over_stdio_fails_natively_as_compiled() -> None:
    """The mutant that keeps running after it responded breaks the liveness of the graph
    itself (``settles``: reachable, ``no_deadlock``: unstuck); an ``eventually`` property over
    stdio is judged in the runs above (``requests_answered``, holding)."""
    sp = _stdio("atomic-runs-after-respond", "2025-11-25", ids=1)
    compiled, ran = explore(sp, engine="compiled"), explore(sp, engine="native")
    agree(compiled, ran)
    live = [p.name for p in sp.props if p.kind == "liveness"]
    assert {n for n in live if ran.verdicts[n] == "fails"} == {"settles", "no_deadlock"}
    assert all(ran.loops[n] for n in ("settles", "no_deadlock"))
    assert "requests_answered" in unreduced("atomic")[1].verdicts


# --- the C ranks and least renaming are Python's ------------------------------------------------


def _c(sp: Spec, fn: str, symmetry: bool) -> Any:
    """``s -> `` the C's ``fn`` (``nb_ranks``, ``nb_canon``) of ``s``, as a state."""
    _, lib = native_spec.prepare(sp, symmetry)
    n = sum(1 if v.keys is None else v.keys for v in sp.vars)
    out = ctypes.create_string_buffer(n)

    def call(s: Any) -> Any:
        getattr(lib, fn)(native_spec._pack(sp, s), out)
        return native_spec._unpack(sp, out.raw[:n])

    return call


#: random states compared per spec: enough that many have two live stamps of equal time
RANDOM = 2000


def _wrong_ranks(sp: Spec) -> list[Any]:
    assert sp.canon is not None
    ranks = _c(sp, "nb_ranks", False)
    return [s for s in random_states(sp, RANDOM, seed=11) if ranks(s) != sp.canon(s)]


def _wrong_canon(sp: Spec) -> list[Any]:
    python, c = ds.Canon(sp), _c(sp, "nb_canon", True)
    return [s for s in random_states(sp, RANDOM, seed=13) if c(s) != python(s)]


def test_the_c_ranks_and_least_renaming_are_pythons() -> None:
    sp = safety(_stdio("unguarded"))
    wrong = _wrong_ranks(sp)
    assert not wrong, wrong[:3]
    # the states tried tell the orders apart: live stamps of equal time, and renamings
    assert sum(s != sp.canon(s) for s in random_states(sp, RANDOM, seed=11)) > RANDOM // 2
    wrong = _wrong_canon(sp)
    assert not wrong, wrong[:3]


# --- the comparison can fail --------------------------------------------------------------------


def _patched(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, where: str, old: str, new: str
) -> None:
    """The generated C with ``old`` replaced by ``new`` in the text of ``where`` (``generate``:
    the whole source; ``canon_source``: the least renaming), built in a cache of the test's
    own."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    if where == "canon_source":
        real_canon = native_spec_c.canon_source

        def canon(sp: Spec) -> str:
            text = real_canon(sp)
            assert old in text
            return text.replace(old, new)

        monkeypatch.setattr(native_spec_c, "canon_source", canon)
        return
    wrong_c(monkeypatch, old, new)


def test_c_that_skips_the_ranks_after_a_move_keeps_other_states(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The native search runs on and keeps states the concrete rules never reach (the
    times as written), so the first trace rebuilt stops the run."""
    _patched(monkeypatch, tmp_path, "generate", "    ranks(q);\n", "")
    with pytest.raises(NativeSpecError, match="not the concrete one"):
        explore(_stdio("atomic"), engine="native")


def test_c_that_ranks_equal_times_the_other_way_is_caught(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    _patched(monkeypatch, tmp_path, "generate", "tm[at[r - 1]] > tm[j]", "tm[at[r - 1]] >= tm[j]")
    assert _wrong_ranks(safety(_stdio("unguarded")))


def test_c_that_does_not_rank_after_a_renaming_is_caught(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    _patched(monkeypatch, tmp_path, "canon_source", "        ranks(t);\n", "")
    assert _wrong_canon(safety(_stdio("unguarded")))


@pytest.mark.slow
def test_the_2025_stdio_session_at_two_ids_agrees() -> None:
    """2025-11-25 over stdio at two ids and two instances: about 116 thousand states, 33
    thousand reduced."""
    sp = _stdio("atomic", "2025-11-25")
    agree(explore(sp, engine="compiled"), explore(sp, engine="native"))
    compiled, ran = reduced(safety(sp))
    assert ran.symmetry.startswith("reduced: ")
    agree(compiled, ran)
