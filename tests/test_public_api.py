"""The public API at the top of the package: the names of ``__all__``, and nothing more."""

from __future__ import annotations

import subprocess
import sys

import mcp_inflight

PUBLIC = {
    "Server",
    "__version__",
    "create_app",
    "guard",
    "guard_stdio",
    "probe_app",
    "probe_app_async",
    "serve_stdio",
}


def test_all_names_the_public_api_and_each_imports():
    assert set(mcp_inflight.__all__) == PUBLIC and len(mcp_inflight.__all__) == len(PUBLIC)
    for name in mcp_inflight.__all__:
        assert getattr(mcp_inflight, name) is not None, name
    from mcp_inflight import (  # noqa: F401 - the documented import line
        Server,
        create_app,
        guard,
        guard_stdio,
        serve_stdio,
    )
    from mcp_inflight.impl.http import create_app as http_create_app
    from mcp_inflight.impl.server import Server as ServerClass
    from mcp_inflight.impl.stdio import serve_stdio as stdio_serve

    assert Server is ServerClass and create_app is http_create_app and serve_stdio is stdio_serve
    assert callable(guard) and callable(guard_stdio)
    assert "_WHERE" not in mcp_inflight.__all__ and not hasattr(mcp_inflight, "nothing_here")


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_importing_the_package_imports_none_of_it():
    code = "import sys, mcp_inflight; print(sorted(m for m in sys.modules if 'mcp_inflight.' in m))"
    assert run(code) == "[]"
    code = "import sys, mcp_inflight; print('typing' in sys.modules, 'asyncio' in sys.modules)"
    assert run(code) == "False False"


def test_guard_is_the_guard_whichever_import_comes_first():
    """``guard`` names both a function and its module: either import order gives a callable
    that guards, and the module's other names stay reachable."""
    for first in ("import mcp_inflight.guard as m", "from mcp_inflight import guard"):
        code = (
            f"{first}\n"
            "from mcp_inflight import guard\n"
            "import mcp_inflight.guard as m\n"
            "from mcp_inflight.guard import Guard, guard as f\n"
            "from mcp_inflight.impl.guard import Guard as G\n"
            "class App:\n"
            "    async def __call__(self, scope, receive, send): pass\n"
            "print(type(guard(App())) is G, type(f(App())) is G, m.Guard is Guard is G)"
        )
        assert run(code) == "True True True", first
