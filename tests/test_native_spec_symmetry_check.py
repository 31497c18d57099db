"""The symmetry check in C (``proofs/native_spec_check.py``) against the Python check
(``declared_symmetry.check`` on the compiled rules): the whole ``SymmetryResult`` alike, states
checked, completeness and the first break (rule, renaming, state and move).

* On every lease design, the lease at two ids, and the session declaration 2026-07-28 over HTTP
  and stdio at two ids and two instances (atomic and unguarded): both pass, on the same states.
* On models made wrong as ``tests/test_declared_symmetry.py`` makes them (a guard sparing worker
  0, an effect killing worker 0 on pause, a property about worker 0, arrivals out of order, a
  move that frees a used slot, an output naming a sort without ``out_sorts``): the same first
  break.
* The native reduced run takes the C check's result, and says the same as the compiled run;
  where an output is not generated for the C check, it makes the Python check.
* The comparison can fail: C that renames the slots but not the values naming them breaks
  where Python finds no break.

The 2025-11-25 session at two ids and two instances is in the slow set.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mcp_inflight.model import lease, lease_state
from mcp_inflight.model.config import Config
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import declared_symmetry as ds
from mcp_inflight.proofs import native_build, native_spec
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.native_spec_check import check_native
from mcp_inflight.proofs.prove import all_designs
from mcp_inflight.proofs.rules import rules_of
from support.declared import (
    arrivals_anywhere,
    kill_worker_0_on_pause,
    property_about_worker_0,
    release_frees_its_slot,
    spare_worker_0,
    with_output,
    wrong_c,
)

pytestmark = pytest.mark.skipif(not native_build.available(), reason="no C compiler")


def both(sp: Spec) -> ds.SymmetryResult:
    """The C check of ``sp``, asserted decided in C and equal to the Python check."""
    gen, lib = native_spec.prepare(sp, True)
    assert not isinstance(gen.check, str), gen.check
    mine = check_native(sp, gen, lib)
    assert mine is not None
    theirs = ds.check(sp, rules_of(sp, "compiled"))
    assert mine == theirs
    assert mine.text() == theirs.text()
    return mine


def _session(design: str, revision: str, transport: str) -> Spec:
    return session_spec(Config(all_designs()[design], revision, transport, 2, 2))


@pytest.mark.parametrize("design", list(lease_state.DESIGNS))
def test_lease_designs(design: str) -> None:
    res = both(lease.spec(design))
    assert res.ok and res.complete


def test_lease_two_ids() -> None:
    assert both(lease.spec("unfenced", ids=2)).ok


#: unguarded in the slow set: the same declaration and renamings as atomic's (its rules differ)
@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("design", ["atomic", pytest.param("unguarded", marks=pytest.mark.slow)])
def test_session_2026(design: str, transport: str) -> None:
    assert both(_session(design, "2026-07-28", transport)).ok


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_session_2025(design: str, transport: str) -> None:
    assert both(_session(design, "2025-11-25", transport)).ok


def broken(sp: Spec, rule: str) -> ds.SymmetryResult:
    res = both(sp)
    assert res.broken is not None and res.broken.rule.startswith(rule), res.text()
    return res


def test_guard_that_spares_worker_0(monkeypatch: pytest.MonkeyPatch) -> None:
    spare_worker_0(monkeypatch)
    res = broken(lease.spec(), "the guard of ")
    assert res.broken is not None and "worker 0->1" in res.broken.renaming


def test_effect_that_kills_worker_0_on_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    kill_worker_0_on_pause(monkeypatch)
    broken(lease.spec(), "the effect of pause")


def test_property_about_worker_0(monkeypatch: pytest.MonkeyPatch) -> None:
    name = property_about_worker_0(monkeypatch)
    broken(lease.spec(), f"property {name}")


def test_arrivals_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    arrivals_anywhere(monkeypatch)
    broken(lease.spec(), "the effect of arrive (the order of inst")


def test_a_move_that_frees_a_used_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    release_frees_its_slot(monkeypatch)
    broken(lease.spec(), "the effect of release (it frees a used slot of inst")


def test_output_naming_a_sort() -> None:
    broken(with_output(lease.spec(), "pause", ()), "the output of pause")
    assert both(with_output(lease.spec(), "pause", (("who", "worker"),))).ok


def test_the_native_run_takes_the_c_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native reduced run makes no Python check where the C one decides, and says what
    the compiled run says."""
    sp = lease.spec("unfenced", ids=2)
    compiled = explore(sp, symmetry=True, engine="compiled")
    monkeypatch.setattr(ds, "check", None)  # not called
    ran = explore(sp, symmetry=True, engine="native")
    assert ran.symmetry == compiled.symmetry and ran.symmetry.startswith("reduced: ")
    assert ran.states == compiled.states


def test_an_output_the_c_does_not_compare_falls_back_to_python() -> None:
    """An output holding a tuple of tuples is not generated for the C check (``Generated.check``
    says why): the native run makes the Python check and says what the compiled run says (here:
    the output names a worker undeclared, so both run unreduced)."""
    sp = lease.spec("unfenced")
    a = sp.act("pause")

    def output(b: Any, s: Any, **args: int) -> dict[str, Any]:
        return {**a.outputs(b, s, **args), "who": ((args["w"], 0),)}

    new = dataclasses.replace(a, output=output)
    sp = dataclasses.replace(sp, acts=tuple(new if x is a else x for x in sp.acts))
    gen, _ = native_spec.prepare(sp, True)
    assert isinstance(gen.check, str) and "tuple of tuples" in gen.check
    compiled = explore(sp, symmetry=True, engine="compiled")
    ran = explore(sp, symmetry=True, engine="native")
    assert ran.symmetry == compiled.symmetry
    assert ran.symmetry.startswith("unreduced: ") and "the output of pause" in ran.symmetry
    assert ran.states == compiled.states


def test_the_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """C that moves the slots but leaves the values naming them as they are finds a break the
    Python check does not."""
    sp = lease.spec("unfenced", ids=2)
    wrong_c(
        monkeypatch, "out[i] = CK_MAP[mid[i]][(unsigned char)s[src[i]]];", "out[i] = s[src[i]];"
    )
    gen, lib = native_spec.prepare(sp, True)
    mine = check_native(sp, gen, lib)
    assert mine is not None and not mine.ok
    assert ds.check(sp, rules_of(sp, "compiled")).ok
