"""``tests/conformance/run.py`` loaded as a module, for the tests that judge what it judges.

The runner is a script (run by path, not installed), so each test module loads its own copy
under its own name: a test that patches the copy's paths (``EXPECTED``) leaves the others'
alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

RUN = Path(__file__).resolve().parent.parent / "conformance" / "run.py"


def load_run(name: str) -> ModuleType:
    """A fresh copy of ``tests/conformance/run.py`` as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, RUN)
    assert spec is not None and spec.loader is not None, RUN
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
