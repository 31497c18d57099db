"""The session model in the one declaration: :func:`spec` reads one configuration of
the session model (its fields, ``model/session_state.py``; its actions,
``model/session.py``; the properties of ``model/properties.py`` and the
auxiliary invariants of ``model/auxiliary.py``) as a :class:`~.declare.Spec`.

Nothing here states a rule.  Every guard, output and effect is the session action's own, called
with the configuration and the move's arguments (``r``, the request instance; ``i``, the id of
a move that takes one); every property is the session property's own predicate.  What the
declaration says of them is read from the session's tables:

* each field is a variable, keyed by instance (``inst``), by id (``id``) or scalar, its values
  the range of its sort (a lifecycle or another enumeration, an id, an instance or ``NONE``, a
  flag, a send time: a rank among the requests and cancels on the wire), its role ``ghost``, ``wire``
  or ``server`` as the field says, its symmetric sort the kind of its key, the sort its values
  name (``ref``) an id's or an instance's;
* each action is an action of the same name, side (the wire's moves are the environment's) and
  fairness, with the parameters ``r`` and, for a send, ``i``; its outputs are ``(stream,
  goes_out)`` pairs, the stream an instance (``out_sorts``);
* instances are declared ``ordered`` (sends fill their slots in order), so the declared
  symmetry reduction renames them only among the sent ones;
* an invariant is an ``always`` property (state) or a ``step`` property reading the move's
  output; a witness is a ``happens`` property on the steps of the path it names (a ``sometimes`` one where it names none; the session's
  ``reached_on_step``); a hazard is a ``hazard``; a property that does not apply to the profile
  is left out, as the session's explorers report it ``n/a``;
* the stdio clock's renumbering (``canonical_clock``, an exact abstraction) is the declaration's
  ``ranks`` (:data:`RANKS`, read from the same table of stamps);
* the settled states (``session_state.settled``: nothing unfinished, no cancel on the wire) are
  the declaration's ``final`` states: a state with no move is a deadlock only where it is not
  settled.

What this reading is checked by, and what it is not yet (``tests/test_session_spec.py``):

* the one explorer (``proofs/explorer.py``) finds on its compiled and native rules the states,
  transitions, coverage, verdicts and shortest traces of the rules as written (the concrete
  engine), without symmetry reduction, on every design, mutant and profile;
* ids and instances are declared ``unbounded``: the one prover (``proofs/induction.py``)
  proves for any number of them, as the session's own prover does, and its verdict on every
  invariant, step property and auxiliary invariant is that prover's on every design, mutant
  and profile; a counterexample to induction is shown on the session's finite universes
  (:data:`CTI_UNIVERSES`, smallest first).  It does not apply ``canon``: it reads the effects'
  send times as written, so those are declared ``grows`` (naturals without an upper bound for
  the prover; the explorer checks the bound);
* the session's liveness properties (``model/eventually.py``) are part of this reading:
  ``requests_answered`` an ``eventually`` property resting on the same actions' weak fairness,
  ``settles`` and ``no_deadlock`` properties of the graph itself (``reachable`` and
  ``unstuck``, on no fairness), each with the goal ``model/eventually.py`` states; the verdicts
  of the compiled and native engines on them are those of the rules as written
  (``tests/test_session_spec.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import trace
from .auxiliary import AUXILIARY
from .config import Config
from .declare import Act, Prop, Ranks, Spec, Var
from .eventually import DOCS, answered, fair_actions
from .logic import NONE, Logic, Outputs
from .properties import PROPERTIES
from .property_kinds import Property, reached_on_step
from .session import ACTION, Action, actions_for
from .session_conditions import SLOT_ORDER
from .session_state import CLOCK_STAMPS, FIELDS, Field, domains, settled
from .trace import id_name, inst_name

#: the session's sides in the declaration's words
SIDE = {"client": "client", "server": "server", "wire": "environment"}


def _range(f: Field, cfg: Config) -> tuple[int, int]:
    if f.domain is not None:
        return int(min(f.domain)), int(max(f.domain))
    if f.sort == "bool":
        return 0, 1
    if f.sort == "id":
        return 0, cfg.ids - 1
    if f.sort == "inst?":
        return NONE, cfg.requests - 1
    if f.sort == "time":  # a rank among the undelivered requests and cancels
        return 0, 2 * cfg.requests
    raise ValueError(f"field {f.name}: no range for sort {f.sort!r}")


def _int(x: object) -> int:
    """A field's default as the integer the declaration keeps (enumerations, flags, ``NONE``)."""
    if not isinstance(x, int):
        raise ValueError(f"a default that is not an integer: {x!r}")
    return int(x)


def _show(f: Field) -> Callable[[int], str] | None:
    dom = f.domain
    if dom is not None:

        def label(v: int) -> str:
            assert dom is not None
            return dom(v).label

        return label
    if f.sort == "inst?":
        return lambda v: "none" if v == NONE else inst_name(v)
    if f.sort == "id":
        return id_name
    return None


def _var(f: Field, cfg: Config) -> Var:
    lo, hi = _range(f, cfg)
    keys = None if f.key is None else cfg.requests if f.key == "inst" else cfg.ids
    return Var(
        f.name,
        lo,
        hi,
        _int(f.default),
        keys,
        show=_show(f),
        key=None if f.key is None else inst_name if f.key == "inst" else id_name,
        role="ghost" if f.ghost else "wire" if f.wire else "server",
        sort=f.key,
        ref="inst" if f.sort == "inst?" else "id" if f.sort == "id" else None,
        boolean=f.sort == "bool",
        grows=f.sort == "time",
    )


def _act(a: Action, cfg: Config) -> Act:
    takes_id = "i" in a.params
    params = (("r", cfg.requests),) + ((("i", cfg.ids),) if takes_id else ())

    def guard(b: Logic, s: Any, r: int, i: int | None = None) -> Any:
        return a.guard(b, s, cfg, r, i)

    def output(b: Logic, s: Any, r: int, i: int | None = None) -> Outputs:
        return a.output(b, s, cfg, r, i)

    def effect(b: Logic, s: Any, r: int, i: int | None = None) -> Any:
        return a.effect(b, s, cfg, r, i, a.output(b, s, cfg, r, i))

    def story(args: Mapping[str, int]) -> str:
        """The move in words without its states (the sender and the id as the move names them)."""
        i = id_name(args["i"]) if "i" in args else ""
        return a.story.format(r=inst_name(args["r"]), i=i, id=i or "its id", sender="a sender")

    def tell(args: Mapping[str, int], pre: Any, post: Any, out: Mapping[str, Any]) -> str:
        """The move in words once taken, as the session's traces tell it."""
        return trace.story(a, dict(args), pre, post, dict(out), cfg.stdio)

    return Act(
        a.name,
        params,
        guard,
        effect,
        story,
        actor=a.side,
        side=SIDE[a.side],
        fair=a.fair,
        sorts=(("r", "inst"), ("i", "id")) if takes_id else (("r", "inst"),),
        output=output,
        out_sorts=(("*", ("inst", None)),),
        tell=tell,
    )


def _on_step(fn: Callable[..., Any], cfg: Config) -> Callable[..., Any]:
    """A session step predicate ``fn(b, pre, post, c, action, r, i, out)`` read as the
    declaration's ``fn(b, pre, post, move, out)``."""

    def judged(b: Logic, pre: Any, post: Any, m: Any, out: Outputs) -> Any:
        return fn(b, pre, post, cfg, ACTION[m.name], m.kw["r"], m.kw.get("i"), out)

    return judged


def declared(p: Property, cfg: Config) -> Prop:
    """The session property ``p`` (an invariant, witness, hazard or auxiliary invariant of
    ``cfg``) as a property of the declaration."""
    if p.kind == "witness" and p.scope == "state" and not p.through:  # reached on any state
        fn = p.fn
        return Prop(p.name, "sometimes", lambda b, s: fn(b, s, cfg), p.doc)
    if p.kind == "witness":
        return Prop(p.name, "happens", _on_step(reached_on_step(p), cfg), p.doc, with_output=True)
    if p.scope == "step":
        kind = "hazard" if p.kind == "hazard" else "step"
        return Prop(p.name, kind, _on_step(p.fn, cfg), p.doc, with_output=True)
    if p.kind != "invariant" and p.kind != "auxiliary":
        raise ValueError(f"{p.name}: a state {p.kind} has no reading in the declaration")
    fn = p.fn
    return Prop(p.name, "always", lambda b, s: fn(b, s, cfg), p.doc)


#: why instances are renamed only among the sent ones by the declared symmetry reduction
#: (``proofs/declared_symmetry.py``)
SLOT_ORDER_WHY = (
    f"sends fill instance slots in order (the condition {SLOT_ORDER}), itself a reduction: "
    "only a renaming among the sent instances is a symmetry of the rules"
)


def _requests_answered(cfg: Config) -> Prop:
    """The session's ``requests_answered`` (``model/eventually.py``) as an ``eventually``
    property: no client request stays pending on a run weakly fair to the actions it rests on.
    Within a strongly connected component the pending requests never change (a request stops
    being pending for good; only a send, which no cycle holds, makes one pending), so "no
    request pending" as the goal judges each request as the session's engines do."""
    requests = cfg.requests

    def requests_answered(b: Logic, s: Any) -> Any:
        return answered(b, s, requests)

    return Prop(
        "requests_answered",
        "liveness",
        requests_answered,
        DOCS["requests_answered"],
        fair=fair_actions("requests_answered", cfg),
    )


#: stdio's send times by rank (``session_state.canonical_clock``, as the declaration says it)
RANKS = Ranks("clock", CLOCK_STAMPS)

#: The finite universes (request instances, ids) a counterexample to induction is looked for
#: on, smallest first: the fewest instances and ids that show one.
CTI_UNIVERSES = ((1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (4, 3))


def _of_the_graph() -> tuple[Prop, ...]:
    """The session's ``settles`` (a settled state stays reachable) and ``no_deadlock`` (every
    unsettled state has a move that changes it), properties of the graph itself on no
    fairness, with the goal the session's engines read: ``settled``."""

    def goal(b: Logic, s: Any) -> Any:
        return settled(b, s)

    return (
        Prop("settles", "liveness", goal, DOCS["settles"], shape="reachable"),
        Prop("no_deadlock", "liveness", goal, DOCS["no_deadlock"], shape="unstuck"),
    )


def spec(cfg: Config, liveness: bool = True) -> Spec:
    """``cfg`` (a design at a profile and bounds) in the one declaration: its bounds size the
    explorer's run; for the prover, ids and instances are unbounded.  Without ``liveness`` the
    three liveness properties are left out (the explorer then keeps no graph: ``check`` at
    bounds where the graph would not fit)."""
    return Spec(
        model="session",
        design=cfg.design.name,
        bounds={"ids": cfg.ids, "requests": cfg.requests},
        vars=tuple(_var(f, cfg) for f in FIELDS),
        acts=tuple(_act(a, cfg) for a in actions_for(cfg)),
        props=tuple(declared(p, cfg) for p in PROPERTIES if p.applies(cfg))
        + ((_requests_answered(cfg), *_of_the_graph()) if liveness else ()),
        domains=domains(cfg),
        aux=tuple(declared(p, cfg) for p in AUXILIARY if p.applies(cfg)),
        run=f"{cfg.label.removeprefix(cfg.design.name + ' ')}, {cfg.ids} ids, "
        f"{cfg.requests} requests",
        ranks=RANKS if cfg.stdio else None,
        final=settled,
        ordered=(("inst", SLOT_ORDER_WHY),),
        unbounded=("inst", "id"),
        universes=tuple((("inst", n), ("id", m)) for n, m in CTI_UNIVERSES),
    )
