"""Building and loading the native engine's C: the compiler, its flags, the cache of shared
objects (``native/`` under ``proofs/cache.py``'s directory, each keyed by a hash of compiler,
flags and source) and the loading through :mod:`ctypes`; and how many threads a search may take.

Nothing here knows a model: ``proofs/native_spec.py`` generates the C of a declared model and
hands it here to be built once and loaded.  Without a C compiler nothing can be built
(:func:`available`; :class:`BuildError`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CFLAGS = ["-O2", "-shared", "-fPIC", "-std=c99", "-pthread", "-w"]
#: A first build: gcc builds at -O0 several times faster, and a small search does not feel the
#: slower code (``proofs/native_spec.py`` builds again with better flags once a search lasts).
QUICK_CFLAGS = ["-O0", *CFLAGS[1:]]

#: A level's batch of fewer states than this is expanded on one thread.  Splitting a level of a
#: few hundred states costs more than it saves; from a few hundred thousand states two threads
#: gain (``bench/native_threads.py``, bench/RESULTS.md).
PARALLEL_FROM = 2048


def default_threads() -> int:
    """Threads for one search: both cores (at most two) in a process of its own, one in a
    worker of the checkers' pools (``proofs/pool.py``), whose runs already fill the cores."""
    from mcp_inflight.proofs import pool

    if pool.in_worker:
        return 1
    return max(1, min(2, os.cpu_count() or 1))


class NativeError(RuntimeError):
    """The native engine cannot run, or stopped on a model error."""


class BuildError(NativeError):
    """The C could not be built or loaded (no compiler, a compiler error, an unwritable cache)."""


def compiler() -> str | None:
    """The C compiler to use: ``$CC`` if set and found, else ``gcc`` or ``cc`` on PATH."""
    for c in (os.environ.get("CC"), "gcc", "cc"):
        if c and shutil.which(c):
            return c
    return None


def available() -> bool:
    return compiler() is not None


def cache_dir() -> Path:
    from mcp_inflight.proofs.cache import root

    return root() / "native"


def built_path(cc: str, flags: list[str], source: str) -> Path:
    """Where the shared object of ``source`` built by ``cc`` with ``flags`` is cached."""
    key = hashlib.sha256("\0".join([cc, *flags, source]).encode()).hexdigest()[:24]
    return cache_dir() / f"explore-{key}.so"


#: how many times this process ran the C compiler (a run says whether its build was cached)
compiles = 0


def build(source: str, flags: list[str] = CFLAGS, better: list[str] | None = None) -> Path:
    """The shared object of ``source``, compiled once and cached by a hash of source and flags
    (built with ``flags``; one built with ``better`` is taken instead when it is cached, and a
    quick build takes the optimised one so)."""
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (set CC or install gcc)")
    d = cache_dir()
    if better is None and flags == QUICK_CFLAGS:
        better = CFLAGS
    if better is not None and (best := built_path(cc, better, source)).exists():
        return best
    so = built_path(cc, flags, source)
    if so.exists():
        return so
    global compiles
    compiles += 1
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d) as tmp:
            c = Path(tmp) / "model.c"
            c.write_text(source)
            out = Path(tmp) / "model.so"
            p = subprocess.run([cc, *flags, "-o", str(out), str(c)], capture_output=True, text=True)
            if p.returncode != 0:
                raise BuildError(f"{cc} failed:\n{p.stderr[-3000:]}")
            os.replace(out, so)  # atomic: a concurrent build of the same source is harmless
    except OSError as e:
        raise BuildError(f"cannot build in {d}: {e}") from e
    return so


#: the builds :func:`build_later` started in this process, by the shared object they make
_later: dict[str, subprocess.Popen[bytes]] = {}

#: the background build: ``$1`` the compiler, the rest its flags; ``T`` the directory of
#: ``model.c``, ``SO`` where the shared object goes (renamed there at once: a run never loads
#: half of one); the directory removed whatever happened
_LATER = (
    'cc="$1"; shift; "$cc" "$@" -o "$T/model.so" "$T/model.c" && mv -f "$T/model.so" "$SO"; '
    'rm -rf "$T"'
)


def build_later(source: str, flags: list[str] = CFLAGS) -> None:
    """Start building ``source`` with ``flags`` into the cache in a process of its own and
    return at once: a later run finds it there (:func:`build`'s ``better``), while this one
    goes on without waiting for the compiler.  Nothing is reported: a build that cannot start
    or fails leaves the runs on the build they have."""
    cc = compiler()
    if cc is None:
        return
    so = built_path(cc, flags, source)
    if so.exists() or str(so) in _later:
        return
    try:
        d = cache_dir()
        d.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=d)
        (Path(tmp) / "model.c").write_text(source)
        _later[str(so)] = subprocess.Popen(
            ["sh", "-c", _LATER, "sh", cc, *flags],
            env={**os.environ, "T": tmp, "SO": str(so)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not stopped with the run that started it
        )
    except OSError:
        return


def finish_builds(timeout: float | None = None) -> None:
    """Wait for the builds :func:`build_later` started in this process (for a caller that
    needs them in the cache now)."""
    for p in list(_later.values()):
        p.wait(timeout)
    _later.clear()


_loaded: dict[str, Any] = {}


def open_library(so: Path, signatures: dict[str, tuple[Any, list[Any]]]) -> Any:
    """The shared object ``so``, loaded once per process, each function of ``signatures`` given
    its result and argument types."""
    lib = _loaded.get(str(so))
    if lib is None:
        try:
            lib = ctypes.CDLL(str(so))
        except OSError as e:
            raise BuildError(f"cannot load {so}: {e}") from e
        for name, (result, args) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = result, args
        _loaded[str(so)] = lib
    return lib
