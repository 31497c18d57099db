"""Symmetry reduction on the declared models' native engine (``proofs/native_spec.py`` with
``symmetry=True``, the least renaming in C by ``proofs/native_spec_symmetry.py``) against the
compiled engine's reduced run.

* On every design of the lease model, on the lease at two ids, and on the session declaration
  (2026-07-28 over HTTP at two ids and two instances, atomic and unguarded), their liveness
  properties dropped (judged under reduction in ``tests/test_native_spec_reduced_liveness.py``),
  the native reduced run finds what the compiled
  reduced run finds: states, transitions, depth, verdicts, traces, coverage, errors,
  completeness, deadlocks and the same words in ``symmetry``; each of its traces replays as a
  real run through the concrete rules.
* The C's least renaming is Python's (``declared_symmetry.Canon``) on every reachable state
  and on random states of every variable's range.
* Where the check fails, or no sort has two values, the native run is unreduced and says why in
  the compiled engine's words.
* The comparison can fail: C that moves the slots but leaves the values naming them as they
  are merges states the rules tell apart (another count), and C that compares bytes unsigned
  (``NONE`` above every name) keeps other representatives, which its traces' replay reports.

The 2025-11-25 session at two ids and two instances (about 80 thousand reduced states) is in
the slow set.
"""

from __future__ import annotations

import ctypes
import dataclasses
from functools import cache
from typing import Any

import pytest

from mcp_inflight.model import lease, lease_actions, lease_state
from mcp_inflight.model.config import Config
from mcp_inflight.model.declare import Act, Spec, Var, sometimes
from mcp_inflight.model.logic import NONE, Write
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import declared_symmetry as ds
from mcp_inflight.proofs import native_build, native_spec, native_spec_c
from mcp_inflight.proofs.compiled_spec import compile_spec
from mcp_inflight.proofs.explorer import Explored, explore
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.walk import transitions_out
from support.declared import agree, random_states, reduced, replays

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


def safety(sp: Spec) -> Spec:
    """``sp`` without its liveness properties (judged under reduction in
    ``tests/test_native_spec_reduced_liveness.py``)."""
    return dataclasses.replace(sp, props=tuple(p for p in sp.props if p.kind != "liveness"))


def _session(design: str, revision: str = "2026-07-28", ids: int = 2) -> Spec:
    return safety(session_spec(Config(all_designs()[design], revision, "http", ids, 2)))


#: the specs compared, by name: every lease design, the lease at two ids, the session's two
SPECS = {
    **{f"lease-{d}": (lambda d=d: safety(lease.spec(d))) for d in lease_state.DESIGNS},
    "lease-unfenced-2-ids": lambda: safety(lease.spec("unfenced", ids=2)),
    "session-atomic": lambda: _session("atomic"),
    "session-unguarded": lambda: _session("unguarded"),
}


@cache
def spec_of(name: str) -> Spec:
    return SPECS[name]()


@cache
def runs(name: str) -> tuple[Explored, Explored]:
    """The compiled and native reduced runs of ``SPECS[name]``, once per test process (the
    tests only read them; the symmetry check made once for both, ``support.declared.reduced``)."""
    return reduced(spec_of(name))


def runs_of(sp: Spec) -> tuple[Explored, Explored]:
    """The compiled and native reduced runs of ``sp``."""
    compiled = explore(sp, symmetry=True, engine="compiled")
    return compiled, explore(sp, symmetry=True, engine="native")


@pytest.mark.parametrize("name", list(SPECS))
def test_the_native_reduced_run_finds_what_the_compiled_one_finds(name: str) -> None:
    compiled, ran = runs(name)
    assert ran.symmetry.startswith("reduced: ")
    agree(compiled, ran)
    sp = spec_of(name)
    for steps in [*ran.traces.values(), ran.deadlock_trace or []]:
        replays(sp, steps)


def test_failures_and_their_traces_are_kept() -> None:
    compiled, ran = runs("lease-unfenced-2-ids")
    assert ran.broken() and ran.broken() == compiled.broken()
    sp = spec_of("lease-unfenced-2-ids")
    bad = replays(sp, ran.traces["single_writer"])[-1]
    assert not sp.prop("single_writer").fn(sp.logic(), bad)


# --- the least renaming in C is Python's ------------------------------------------------------


def _canon_c(sp: Spec) -> Any:
    """``s -> `` the state the C search keeps for ``s`` (its ``nb_canon``), as a state."""
    _, lib = native_spec.prepare(sp, True)
    n = sum(1 if v.keys is None else v.keys for v in sp.vars)
    out = ctypes.create_string_buffer(max(n, 1))

    def canon(s: Any) -> Any:
        lib.nb_canon(native_spec._pack(sp, s), out)
        return native_spec._unpack(sp, out.raw[:n])

    return canon


@pytest.mark.parametrize("name", ["lease-fenced", "lease-unfenced-2-ids", "session-unguarded"])
def test_the_c_least_renaming_is_pythons(name: str) -> None:
    sp = spec_of(name)
    reachable = {sp.initial()}
    reachable.update(post for _, _, post, _ in transitions_out(sp, compile_spec(sp).fire))
    python, c = ds.Canon(sp), _canon_c(sp)
    states = [*reachable, *random_states(sp, 2000, seed=7)]
    wrong = [s for s in states if c(s) != python(s)]
    assert not wrong, wrong[:3]
    # the renamings matter: a quarter or more of the reachable states are not their own
    # representative
    assert sum(python(s) != s for s in reachable) > len(reachable) // 4


# --- unreduced and refused, in the compiled engine's words -------------------------------------


def test_a_failed_check_runs_unreduced_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def spare(b: Any, s: Any, c: Any, r: Any, w: Any, i: Any) -> Any:
        return w != 0

    monkeypatch.setattr(lease_actions, "_true", spare)  # crash, pause and resume spare worker 0
    sp = safety(lease.spec("fenced"))
    compiled, ran = (
        explore(sp, symmetry=True, engine="compiled"),
        explore(sp, symmetry=True, engine="native"),
    )
    assert ran.symmetry.startswith("unreduced: not symmetric in worker (2)"), ran.symmetry
    agree(compiled, ran)
    assert ran.states == explore(sp, engine="native").states


def test_nothing_to_rename_runs_unreduced_without_a_check(monkeypatch: pytest.MonkeyPatch) -> None:
    sp = lease.spec(workers=1, requests=1)  # liveness kept: the run is unreduced anyway
    monkeypatch.setattr(ds, "check", None)  # not called
    compiled, ran = (
        explore(sp, symmetry=True, engine="compiled"),
        explore(sp, symmetry=True, engine="native"),
    )
    assert ran.symmetry == "unreduced: no declared sort has two or more values to rename"
    agree(compiled, ran)


# --- the comparison can fail ------------------------------------------------------------------


def _patched(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, old: str, new: str) -> None:
    """The generated canonicalisation with ``old`` replaced by ``new`` (built in a cache of
    the test's own)."""
    monkeypatch.setenv("MCP_INFLIGHT_CACHE", str(tmp_path))
    real = native_spec_c.canon_source

    def wrong(sp: Spec) -> str:
        text = real(sp)
        assert old in text
        return text.replace(old, new)

    monkeypatch.setattr(native_spec_c, "canon_source", wrong)


def test_slots_moved_without_renaming_their_names_merge_other_states(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Each renaming's slots moved but every value kept (no ``ref`` renamed): not a renaming
    of the model, so states the rules tell apart are merged."""
    compiled, _ = runs("lease-fenced")
    map_of = "CMAP[mid[i]][(unsigned char)s[src[i]]]"
    _patched(monkeypatch, tmp_path, map_of, "CMAP[0][(unsigned char)s[src[i]]]")
    ran = explore(spec_of("lease-fenced"), symmetry=True, engine="native")
    assert ran.states != compiled.states


def test_an_unsigned_comparison_keeps_other_representatives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Bytes compared unsigned (``NONE`` above every name): the same orbits, other
    representatives where ``NONE`` decides.  On the lease and the session it decides on no
    reachable state (an earlier byte always tells the renamings apart), so on the lease it is
    shown on a state no run reaches (an id with a worker before any instance arrived), and the
    run on a model of two ids with one slot each, ``NONE`` or 0, whose witness's trace then no
    longer replays."""
    two = _two_ids()
    compiled, plain = runs_of(two)
    agree(compiled, plain)
    unsigned = "if ((unsigned char)v > (unsigned char)out[i]) goto next;"
    _patched(monkeypatch, tmp_path, "if (v > out[i]) goto next;", unsigned)
    sp = spec_of("lease-unfenced-2-ids")
    # id 1 with a worker, no instance arrived: its renamings differ first at cw
    odd = sp.initial()._replace(cw=(NONE, 0))
    assert ds.Canon(sp)(odd) == odd and _canon_c(sp)(odd) == odd._replace(cw=(0, NONE))
    ran = explore(two, symmetry=True, engine="native")
    assert ran.states == compiled.states == 3  # one state per orbit still
    assert ran.traces.keys() == compiled.traces.keys() == {"one_set"}
    assert any("does not replay" in e for e in ran.errors), ran.errors


def _two_ids() -> Spec:
    """Two ids, each with one slot, ``NONE`` or 0, set once."""

    @sometimes
    def one_set(b: Any, s: Any) -> Any:
        """Some slot is set."""
        return b.Exists("id", lambda i: s.x[i] == 0)

    return Spec(
        model="two_ids",
        design="plain",
        bounds={"ids": 2},
        vars=(Var("x", NONE, 0, NONE, 2, sort="id"),),
        acts=(
            Act(
                "set",
                (("i", 2),),
                lambda b, s, i: s.x[i] == NONE,
                lambda b, s, i: [Write("x", i, 0)],
                lambda a: f"set {a['i']}",
                sorts=(("i", "id"),),
            ),
        ),
        props=(one_set,),
        domains={"id": range(2)},
    )


@pytest.mark.slow
@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_the_2025_session_at_two_ids_agrees(design: str) -> None:
    """2025-11-25 over HTTP at two ids and two instances: about 80 thousand reduced states."""
    sp = _session(design, "2025-11-25")
    compiled = explore(sp, symmetry=True, engine="compiled")
    ran = explore(sp, symmetry=True, engine="native")
    assert ran.symmetry.startswith("reduced: ")
    agree(compiled, ran)
    for steps in ran.traces.values():
        replays(sp, steps)
