"""mcp-inflight: the request lifecycle of MCP servers as one verified state machine.

The public API is what ``__all__`` names, importable from here::

    from mcp_inflight import Server, create_app, serve_stdio, guard, guard_stdio

* :class:`Server`: the server API (tools, methods, the handler's context), run by the core;
* :func:`create_app`: its Streamable HTTP ASGI app (``store=`` a session store, ``redis=`` a
  Redis URL for one of several workers);
* :func:`serve_stdio`: the same server on stdin/stdout;
* :func:`guard` and :func:`guard_stdio`: the core in front of a server of the official Python
  SDK, over HTTP and stdio (``trace=`` and ``online=`` as in :mod:`mcp_inflight.guard`; that
  module's ``serve_stdio`` runs an SDK server behind :func:`guard_stdio`);
* :func:`probe_app` and :func:`probe_app_async`: the black-box probe of an ASGI app for in-flight
  id collisions, in process; the probe of a URL is ``mcp_inflight.probe.probe`` (and
  ``mcp-inflight probe URL``): at the top level ``probe`` names that subpackage;
* ``__version__``.

``guard`` shares its name with its module, :mod:`mcp_inflight.guard` (``Guard``, ``DESIGN``,
...), which the import system binds on the package once imported; so ``mcp_inflight.guard`` is
that module, made callable as the function (``guard(app, ...)`` is
``mcp_inflight.guard.guard(app, ...)``), and every import of either keeps working.

Everything else is internal and may change between releases: the specification
(``mcp_inflight.model``), the checkers (``mcp_inflight.proofs``), the runtime's modules
(``mcp_inflight.impl``: core, adapters, stores), the command lines, drawing, the web explorer,
the trace package and the probe's other modules.

The names are imported on first use (PEP 562): ``import mcp_inflight`` costs next to nothing,
and a user of the probe alone never imports the server, nor a user of the server the probe.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's own flag, without importing typing (mypy reads it the same)

__version__ = "0.1.0"

#: public name -> the module that defines it
_WHERE = {
    "Server": "mcp_inflight.impl.server",
    "create_app": "mcp_inflight.impl.http",
    "serve_stdio": "mcp_inflight.impl.stdio",
    "guard": "mcp_inflight.guard",
    "guard_stdio": "mcp_inflight.guard",
    "probe_app": "mcp_inflight.probe.inprocess",
    "probe_app_async": "mcp_inflight.probe.inprocess",
}

__all__ = [
    "Server",
    "__version__",
    "create_app",
    "guard",
    "guard_stdio",
    "probe_app",
    "probe_app_async",
    "serve_stdio",
]

if TYPE_CHECKING:  # pragma: no cover - what the names are, for type checkers
    from typing import Any

    from mcp_inflight.guard import guard, guard_stdio  # noqa: F811
    from mcp_inflight.impl.http import create_app
    from mcp_inflight.impl.server import Server
    from mcp_inflight.impl.stdio import serve_stdio
    from mcp_inflight.probe.inprocess import probe_app, probe_app_async


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'mcp_inflight' has no attribute {name!r}")
    module = importlib.import_module(where)
    value = module if name == "guard" else getattr(module, name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
