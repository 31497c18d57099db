"""The explorer page: ``mcp-inflight explore`` serves it (``server.py``).

Layers inside the package: ``model_api`` (with ``explain``, which finds the part of a property
that fails) is the only module that reads the session model, the explorer, the drawing code and the
trace package (recorded runtime traces); ``views`` builds the JSON the page shows from it; ``jobs`` runs the
explorations behind the list of traces; ``server`` is the HTTP server and the command line; ``errors`` holds the one query error;
``declared_api`` is the models page's window on the declared models and their one checker
(``/models``); ``static/`` holds the pages (plain HTML, CSS and JavaScript; the diagram is SVG drawn by the
script; nothing to build).
"""

from __future__ import annotations


def run(argv: list[str]) -> int:
    from mcp_inflight.web.server import run as _run

    return _run(argv)
