"""The declared models as the engine-agreement tests take them: their names, their modules,
what two engines' runs of one are compared on, both engines' reduced runs of one spec, and a
small model whose liveness under reduction needs its orbits unfolded (the baton)."""

from __future__ import annotations

import dataclasses
import importlib
import random
from types import ModuleType
from typing import Any
from unittest.mock import patch

from mcp_inflight.model.declare import Act, Move, Spec, Var, eventually, render_step, take
from mcp_inflight.model.logic import Write
from mcp_inflight.proofs import declared_symmetry as ds
from mcp_inflight.proofs.explored import Explored
from mcp_inflight.proofs.explorer import explore

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


def reduced(sp: Spec) -> tuple[Explored, Explored]:
    """The compiled and native reduced runs of ``sp``: the Python symmetry check made once, by
    the compiled run on its rules; the native run makes its own in C
    (``proofs/native_spec_check.py``), whose words ``agree`` compares with the compiled run's."""
    real, made = ds.check, []

    def once(spec: Spec, rules: Any, *args: Any) -> ds.SymmetryResult:
        assert spec is sp and rules.name == "compiled"
        made.append(made[0] if made else real(spec, rules, *args))
        return made[0]

    with patch.object(ds, "check", once):
        compiled = explore(sp, symmetry=True, engine="compiled")
        ran = explore(sp, symmetry=True, engine="native")
    assert len(made) == 1
    return compiled, ran


def baton() -> Spec:
    """Two holders (sort ``w``) pass a baton ``x`` between them (``pass``); the one not
    holding it may ``finish`` (``d``).  Both are fair, and the goal is ``d == 1``.  A fair run
    may pass the baton for ever: ``finish(w)`` is enabled only while the other holds it, so
    never continuously, and weak fairness does not force it.  Reduced, the baton's one orbit is
    one state with a move back to itself (``pass`` from holder 0, as the representative names
    it) and ``finish`` from holder 1 enabled there, never taken: read on the representative's
    move names, weak fairness would force it and the goal would hold."""

    def done(b: Any, s: Any) -> Any:
        """d is set."""
        return s.d == 1

    return Spec(
        "baton",
        "-",
        {},
        (Var("x", 0, 1, 0, ref="w"), Var("d", 0, 1, 0)),
        (
            Act(
                "pass",
                (("w", 2),),
                lambda b, s, w: b.And(s.x == w, s.d == 0),
                lambda b, s, w: [Write("x", None, 1 - w)],
                lambda a: f"{a['w']} passes the baton",
                fair="weak",
                sorts=(("w", "w"),),
            ),
            Act(
                "finish",
                (("w", 2),),
                lambda b, s, w: b.And(s.x != w, s.d == 0),
                lambda b, s, w: [Write("d", None, 1)],
                lambda a: f"{a['w']} finishes",
                fair="weak",
                sorts=(("w", "w"),),
            ),
        ),
        (eventually("pass", "finish")(done),),
        {"w": (0, 1)},
    )


def replays(sp: Spec, steps: list[dict[str, Any]], x: Any = None) -> list[Any]:
    """The states ``steps`` pass through from ``x`` (default: the initial state): each step
    taken by the concrete rules and rendered again alike."""
    b = sp.logic()
    x = sp.initial() if x is None else x
    out = [x]
    for st in steps:
        m = Move(sp.act(st["action"]), tuple(st["args"].items()))
        y = take(sp, x, m, b)
        assert y is not None, f"{m} is not enabled"
        assert render_step(sp, m, x, y, m.act.outputs(b, x, **m.kw)) == st
        out.append(y)
        x = y
    return out


def agree(compiled: Explored, ran: Explored) -> None:
    """The native run is the compiled one: the same findings and symmetry, no errors."""
    assert compiled.engine == "compiled" and ran.engine == "native"
    assert ran.symmetry == compiled.symmetry
    assert found(ran) == found(compiled)
    assert not ran.errors


def random_states(sp: Spec, n: int, seed: int) -> list[Any]:
    """``n`` states of ``sp`` with every slot drawn in its variable's range (reachable or
    not), the same for a seed."""
    rnd = random.Random(seed)

    def value(v: Any) -> Any:
        if v.keys is None:
            return rnd.randint(v.lo, v.hi)
        return tuple(rnd.randint(v.lo, v.hi) for _ in range(v.keys))

    return [sp.state_type(*[value(v) for v in sp.vars]) for _ in range(n)]


def wrong_c(monkeypatch: Any, old: str, new: str) -> None:
    """The native engine's generated C with ``old`` replaced by ``new`` (which must occur), for
    the rest of the test: a test then shows the comparison catching C that is wrong."""
    from mcp_inflight.proofs import native_spec

    real = native_spec.generate

    def wrong(sp: Spec, *args: Any) -> Any:
        gen = real(sp, *args)
        assert old in gen.source
        return dataclasses.replace(gen, source=gen.source.replace(old, new))

    monkeypatch.setattr(native_spec, "generate", wrong)


# --- the lease broken on purpose: rules that treat one value of a sort apart ------------------


def spare_worker_0(monkeypatch: Any) -> None:
    """Crash, pause and resume never take worker 0 (a guard that spares it)."""
    from mcp_inflight.model import lease_actions

    def spare(b: Any, s: Any, c: Any, r: Any, w: Any, i: Any) -> Any:
        return w != 0

    monkeypatch.setattr(lease_actions, "_true", spare)


def kill_worker_0_on_pause(monkeypatch: Any) -> None:
    """Pausing worker 0 kills it (an effect that treats it apart)."""
    from mcp_inflight.model import lease_actions, lease_state

    plain = lease_actions._set_proc

    def set_proc(to: Any) -> Any:
        def effect(b: Any, s: Any, c: Any, r: Any, w: Any, i: Any) -> Any:
            if to == lease_state.Proc.PAUSED and w == 0:
                return plain(lease_state.Proc.DEAD)(b, s, c, r, w, i)
            return plain(to)(b, s, c, r, w, i)

        return effect

    monkeypatch.setattr(lease_actions, "_set_proc", set_proc)


def property_about_worker_0(monkeypatch: Any) -> str:
    """The lease's properties with one about worker 0 alone; its name."""
    from mcp_inflight.model import lease, lease_state
    from mcp_inflight.model.declare import always

    @always
    def first_worker_never_dies_alone(b: Any, s: Any, cfg: Any) -> Any:
        """Worker 0 dies only once worker 1 has (a property about one worker)."""
        dead = lease_state.Proc.DEAD
        return b.Implies(s.wstate[0] == dead, s.wstate[1] == dead)

    monkeypatch.setattr(lease, "PROPERTIES", lease.PROPERTIES + (first_worker_never_dies_alone,))
    return first_worker_never_dies_alone.name


def arrivals_anywhere(monkeypatch: Any) -> None:
    """A request may arrive in any instance slot, not the next free one."""
    from mcp_inflight.model import lease_actions

    def anywhere(b: Any, s: Any, c: Any, r: Any, w: Any, i: Any) -> Any:
        return True

    monkeypatch.setattr(lease_actions, "_arrive_guard", anywhere)


def release_frees_its_slot(monkeypatch: Any) -> None:
    """A release puts its instance slot back as it was before the request arrived."""
    from mcp_inflight.model import lease_actions, lease_state

    def forget(b: Any, s: Any, c: Any, r: Any, w: Any, i: Any) -> Any:
        fresh = {"life": lease_state.Phase.UNSENT, "tok": 0, "checked": False}
        fresh.update(told=lease_state.Told.NONE, expired=lease_state.Expiry.NO)
        return [Write(name, r, v) for name, v in fresh.items()]

    monkeypatch.setattr(lease_actions, "_release", forget)


def with_output(sp: Spec, name: str, out_sorts: Any) -> Spec:
    """``sp`` whose action ``name`` also tells the worker it acts on (``who``)."""
    a = sp.act(name)

    def output(b: Any, s: Any, **args: int) -> dict[str, Any]:
        return {**a.outputs(b, s, **args), "who": args["w"]}

    new = dataclasses.replace(a, output=output, out_sorts=out_sorts)
    return dataclasses.replace(sp, acts=tuple(new if x is a else x for x in sp.acts))
