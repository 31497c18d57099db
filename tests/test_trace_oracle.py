"""The test oracle (``tests/support/oracle.py``) on traces it must find wrong: a server
process's trace file, and a pool of workers' files read as one."""

from __future__ import annotations

import json

from test_trace_writers import _clean_session

from mcp_inflight.trace.format import S2C, event
from support import oracle

MISROUTED = {"jsonrpc": "2.0", "id": 1, "result": {}}


def _write(path, events) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")


def _misrouted(sid: str) -> list[dict]:
    """The clean session, then the call's response written again, on the refused POST."""
    evs = _clean_session(sid)
    return evs[:7] + [event("message", 2, S2C, sid, message=MISROUTED)] + evs[7:]


def test_a_server_process_trace_file_is_checked_as_it_grows():
    o = oracle.trace_file("a server process")
    try:
        _write(o.path, _clean_session("s1"))
        assert o.check() == []
        _write(o.path, _misrouted("s2")[:9])  # a prefix: the read stops at the last line
        bad = o.check()
        assert len(bad) == 1 and "session s2" in bad[0] and "response id=1" in bad[0]
        assert oracle.check_all() == []  # reported once
    finally:
        o.retire()
    assert oracle.check_all() == []


def test_a_stopped_server_is_reported_by_the_next_check():
    o = oracle.trace_file("a server process")
    _write(o.path, _misrouted("s3"))
    o.alive = lambda: False  # it has stopped: its whole trace is read, then it is retired
    bad = oracle.check_all()
    assert len(bad) == 1 and "session s3" in bad[0]
    assert o not in oracle._LIVE and not o.path.exists()


def test_a_pool_is_checked_as_one_trace_in_time_order():
    """One session's exchanges on two workers, each numbering its POSTs from 1: read as one
    trace they are a clean run; the refused duplicate's POST on the second worker."""
    o = oracle.pool(oracle.trace_file("a pool"), 2)
    try:
        evs = _clean_session("s4")
        first = [ev for ev in evs if ev["exchange"] == 1]
        second = [dict(ev, exchange=1) for ev in evs if ev["exchange"] == 2]
        _write(o.parts[0], first)
        _write(o.parts[1], second)
        assert o.check() == []
        assert o.monitor.steps > 0
        # the same misrouting as above, across the two workers
        evs = _misrouted("s5")
        _write(o.parts[0], [ev for ev in evs if ev["exchange"] == 1])
        _write(o.parts[1], [dict(ev, exchange=1) for ev in evs if ev["exchange"] == 2])
        bad = o.check()
        assert len(bad) == 1 and "session s5" in bad[0]
    finally:
        o.retire()
        oracle.check_all()
