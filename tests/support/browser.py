"""Chromium (the Debian package) driven by Playwright for Python, for the browser tests.

Playwright's own browser download is not used: the system Chromium is launched by path, with
the flags a closed network needs (no background connections, no component updates).  A test
module skips, saying which is missing, when Playwright or Chromium is absent: use ``SKIPS`` in
its ``pytestmark``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("MCP_INFLIGHT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sync_playwright = None

SKIPS = [
    pytest.mark.skipif(
        sync_playwright is None,
        reason="Playwright for Python is not installed (pip install playwright)",
    ),
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium)",
    ),
]


@contextmanager
def chromium(**options: Any) -> Iterator[Any]:
    """A persistent Chromium context on a fresh profile folder (removed afterwards), with a
    20 s default timeout; ``options`` go to ``launch_persistent_context``."""
    assert sync_playwright is not None
    profile = tempfile.mkdtemp(prefix="mcp-inflight-chromium-")
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=ARGS, **options
            )
            ctx.set_default_timeout(20_000)
            try:
                yield ctx
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
