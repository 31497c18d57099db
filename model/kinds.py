"""The one vocabulary of property kinds, shared by every model and every checker.

Each model declares its properties with a kind of its own spelling (the session and lease
models: ``invariant``, ``witness``, ``liveness``, ``hazard``, ``auxiliary``, with a ``scope`` of
``state`` or ``step``; the small models: ``always``, ``step``, ``sometimes``, ``happens``).  The
checkers' results, the reports, the JSON and the JUnit file speak of them with :class:`Kind`
only, so that a property means the same thing whichever model it belongs to:

* ``invariant``: holds in every reachable state;
* ``step``: holds on every reachable transition (routing, refusal and release rules);
* ``liveness``: from every reachable state, every run weakly fair to the actions it lists
  (each declared fair by its model) reaches its goal;
* ``witness``: some reachable state or transition has it (so that no invariant holds
  vacuously); a session witness only on a step of the actions of the path it names;
* ``hazard``: a property no server design can keep on some profile: judged and reported with
  its trace, never a failure of the check;
* ``auxiliary``: an invariant that helps the prover's induction; checked, never assumed.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    INVARIANT = "invariant"
    STEP = "step"
    LIVENESS = "liveness"
    WITNESS = "witness"
    HAZARD = "hazard"
    AUXILIARY = "auxiliary"

    @property
    def safety(self) -> bool:
        """A kind whose violation has a finite trace and fails the check."""
        return self in (Kind.INVARIANT, Kind.STEP)


#: the declared models' spelling (``model/declare.py``) in the one vocabulary
SMALL_KINDS: dict[str, Kind] = {
    "always": Kind.INVARIANT,
    "step": Kind.STEP,
    "sometimes": Kind.WITNESS,
    "happens": Kind.WITNESS,
}


def kind_of(kind: str, scope: str = "state") -> Kind:
    """The kind of a property declared as ``kind`` (either spelling) with ``scope``."""
    if kind in SMALL_KINDS:
        return SMALL_KINDS[kind]
    k = Kind(kind)
    return Kind.STEP if k is Kind.INVARIANT and scope == "step" else k
