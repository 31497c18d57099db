"""Processes on Linux, read from /proc: a process's children, all its descendants, and whether
one is still alive (a zombie is not)."""

from __future__ import annotations

import os


def _stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (state, parent, ...)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (whichever of its threads started them)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(_stat(d)[1]) == pid:
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def descendants(pid: int) -> set[int]:
    """``pid``'s children, their children, and so on."""
    out: set[int] = set()
    todo = [pid]
    while todo:
        kids = children(todo.pop())
        out.update(kids)
        todo.extend(kids)
    return out


def alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False
