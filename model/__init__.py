"""The specification: lifecycle table, session state and actions, designs, profiles, properties.

Every rule of the request lifecycle is written once in this package; the explorer, the prover,
the diagrams and the runtime core read it.
"""

from .auxiliary import AUXILIARY
from .config import ATOMIC, CHECK_THEN_CLAIM, DESIGNS, UNGUARDED, Config, Design, mutants, profiles
from .lifecycle import Life
from .logic import NONE, Concrete, Write, apply_writes
from .properties import HAZARDS, INVARIANTS, PROPERTIES, PROPERTY, WITNESSES
from .property_kinds import Property
from .session import ACTION, ACTIONS, Action, actions_for
from .session_conditions import CONDITIONS
from .session_state import FIELDS, State, initial

__all__ = [
    "AUXILIARY",
    "ATOMIC",
    "CHECK_THEN_CLAIM",
    "DESIGNS",
    "UNGUARDED",
    "Config",
    "Design",
    "mutants",
    "profiles",
    "Life",
    "NONE",
    "Concrete",
    "Write",
    "apply_writes",
    "HAZARDS",
    "INVARIANTS",
    "PROPERTIES",
    "PROPERTY",
    "WITNESSES",
    "Property",
    "ACTION",
    "ACTIONS",
    "CONDITIONS",
    "FIELDS",
    "Action",
    "State",
    "actions_for",
    "initial",
]
