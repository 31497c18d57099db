"""Servers started as real processes for the tests (the official SDK's, with and without the
guard): each prints ``listening on URL`` once it accepts connections."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).parent
SDK_SERVER = HERE / "sdk_server.py"


def start(argv, env=None):
    """Run ``argv`` and wait (up to 30 s) for its ``listening on URL`` line: (process, URL)."""
    log = open(os.devnull, "w")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("listening on "):
            return proc, line.split()[-1]
    proc.kill()
    raise RuntimeError(f"server did not start: {' '.join(argv)}")


def sdk_server(*flags: str):
    """The official SDK's test server (``tests/support/sdk_server.py``) with ``flags``; behind
    the guard (``--guard``), its wire trace is checked by the model after each test
    (``support/oracle.py``): the guard's promise is that the guarded SDK is the model's."""
    argv = [sys.executable, str(SDK_SERVER), *flags]
    if "--guard" not in flags:
        return start(argv)
    from support import oracle

    argv, o = oracle.traced_argv(argv, "guarded SDK server")
    proc, url = start(argv)
    return oracle.watch(o, proc), url


def stop(proc) -> None:
    proc.terminate()
    proc.wait(10)
