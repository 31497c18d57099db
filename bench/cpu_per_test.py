"""CPU per test of a pytest run, and where it goes by file.

As a pytest plugin it records, for every test, the CPU time of its process (user and system,
its reaped children included: servers, compilers and browsers started and stopped in the test)
and its wall time, one line per test, in the file ``CPU_PER_TEST`` names (default
``cpu-per-test.tsv``; appended to, so every xdist worker writes to it)::

    PYTHONPATH=bench .venv/bin/python -m pytest -q -n 4 -p cpu_per_test
    .venv/bin/python bench/cpu_per_test.py cpu-per-test.tsv [--top 30]

Run as a script it prints the total, the files by CPU and the costliest tests; given two files
(``A.tsv B.tsv``) it prints the files side by side, the largest changes first.  A session-scoped
fixture's CPU (a server started once) is counted in the test that starts or stops it, and a
child still running when a test ends is counted when it is reaped, or not at all.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

OUT = os.environ.get("CPU_PER_TEST", "cpu-per-test.tsv")


def _cpu() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _hook() -> Any:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
        c0, w0 = _cpu(), time.time()
        yield
        c1, w1 = _cpu(), time.time()
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(OUT, "a") as f:
            f.write(f"{item.nodeid}\t{c1 - c0:.3f}\t{w1 - w0:.3f}\t{w0:.3f}\t{w1:.3f}\t{worker}\n")

    return pytest_runtest_protocol


if __name__ != "__main__":
    pytest_runtest_protocol = _hook()


def _rows(path: str) -> list[tuple[str, float, float]]:
    with open(path) as f:
        return [(r[0], float(r[1]), float(r[2])) for r in (line.split("\t") for line in f)]


def _by_file(rows: list[tuple[str, float, float]]) -> collections.Counter[str]:
    out: collections.Counter[str] = collections.Counter()
    for node, cpu, _ in rows:
        out[node.split("::")[0]] += cpu
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="one record to summarise, or two to compare")
    ap.add_argument("--top", type=int, default=25, help="rows of each table (default 25)")
    a = ap.parse_args()
    if len(a.files) == 1:
        rows = _rows(a.files[0])
        print(f"{len(rows)} tests, {sum(c for _, c, _ in rows):.1f} s of CPU")
        print("\nby file (CPU s):")
        for name, cpu in _by_file(rows).most_common(a.top):
            print(f"  {cpu:7.1f}  {name}")
        print("\ncostliest tests (CPU s, wall s):")
        for node, cpu, wall in sorted(rows, key=lambda r: -r[1])[: a.top]:
            print(f"  {cpu:7.2f} {wall:7.2f}  {node}")
        return
    before, after = (_rows(p) for p in a.files[:2])
    fa, fb = _by_file(before), _by_file(after)
    ta, tb = sum(fa.values()), sum(fb.values())
    print(f"total CPU s: {ta:.1f} -> {tb:.1f} ({tb / ta:.2f}x)")
    for name in sorted(set(fa) | set(fb), key=lambda n: -abs(fb[n] - fa[n]))[: a.top]:
        print(f"  {fa[name]:7.1f} -> {fb[name]:7.1f}  {fb[name] - fa[name]:+6.1f}  {name}")


if __name__ == "__main__":
    main()
