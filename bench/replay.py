"""Replay speed: wire events per second through the trace reader, the replay check and the online
check, on traces of one session made here (sequential tool calls with progress, and every tenth
call followed by a duplicate of its id that the server refuses while it runs).

    .venv/bin/python bench/replay.py [--calls 10,30,100] [--progress 3] [--online-calls 2000]

For each size: the events, then events/s of ``format.parse`` (the JSON Lines reader),
``observe_check.check_trace`` (``mcp-inflight replay``'s work on a clean trace: the session cut
where it is at rest on the wire, each part abstracted and checked),
the same on the trace with one progress message moved onto the duplicate's POST (a violation:
``check`` and ``explains``, which tries the other designs), and the online check
(``trace.online.Monitor.feed``, what ``serve --online-check`` runs per event).  Both checks
start the model afresh where the session is at rest (the replay at rest on the wire, the online
check at a settled state); ``--online-calls`` times the online check alone on a longer
session.  Every verdict is checked: the clean traces must replay clean and the mutated ones not.
"""

from __future__ import annotations

import argparse
import json
import time

from mcp_inflight.model.observe_check import check_trace, explains
from mcp_inflight.trace.format import C2S, S2C, event, parse
from mcp_inflight.trace.online import Monitor


def make_trace(calls: int, progress: int, sid: str = "s") -> list[dict]:
    evs: list[dict] = []
    post = 0
    for k in range(calls):
        post += 1
        p = post
        call = {
            "jsonrpc": "2.0",
            "id": k,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": f"t{k}"}},
        }
        evs += [
            event("open", p, C2S, sid, method="POST"),
            event("message", p, C2S, sid, message=call),
            event("status", p, S2C, sid, status=200),
        ]
        for j in range(progress):
            prog = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": f"t{k}", "progress": j + 1},
            }
            evs.append(event("message", p, S2C, sid, message=prog))
            if j == 0 and k % 10 == 9:  # a duplicate of the running call's id, refused
                post += 1
                q = post
                dup = dict(call, params=dict(call["params"], _meta={"progressToken": f"d{k}"}))
                err = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "dup"}}
                evs += [
                    event("open", q, C2S, sid, method="POST"),
                    event("message", q, C2S, sid, message=dup),
                    event("status", q, S2C, sid, status=409),
                    event("message", q, S2C, sid, message=err),
                    event("close", q, S2C, sid, by="server"),
                ]
        evs += [
            event("message", p, S2C, sid, message={"jsonrpc": "2.0", "id": k, "result": {}}),
            event("close", p, S2C, sid, by="server"),
        ]
    return evs


def misroute(evs: list[dict]) -> list[dict]:
    """The last progress message of the first refused duplicate's call, put on its POST."""
    dup_post = next(e["exchange"] for e in evs if e["kind"] == "status" and e["status"] == 409)
    n = next(
        k
        for k in range(len(evs))
        if k > 0
        and evs[k]["exchange"] == dup_post - 1
        and (evs[k].get("message") or {}).get("method") == "notifications/progress"
        and any(e["exchange"] == dup_post for e in evs[:k])
    )
    return evs[:n] + [dict(evs[n], exchange=dup_post)] + evs[n + 1 :]


def timed(fn, reps: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/replay.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", default="10,30,100", help="tool calls per trace (comma-separated)")
    p.add_argument("--progress", type=int, default=3, help="progress messages per call")
    p.add_argument("--online-calls", type=int, default=2000, help="calls of the online-only run")
    args = p.parse_args(argv)
    print(
        f"{'calls':>6} {'events':>7} {'parse ev/s':>11} {'replay ev/s':>12} "
        f"{'violation ev/s':>15} {'online ev/s':>12}"
    )
    ok = True
    for calls in [int(c) for c in args.calls.split(",")]:
        evs = make_trace(calls, args.progress)
        lines = [json.dumps(e) for e in evs]
        bad = misroute(evs)
        n = len(evs)
        t_parse = timed(lambda lines=lines: parse(lines), 3)
        verdict = {}

        def clean(evs=evs, verdict=verdict):
            verdict["clean"] = check_trace(evs)[1].clean

        def violation(bad=bad, verdict=verdict):
            ab, v = check_trace(bad)
            verdict["flagged"] = not v.clean
            verdict["others"] = [o.cfg.design.name for o in explains(ab)]

        def online(evs=evs, verdict=verdict):
            m = Monitor()
            for e in evs:
                m.feed(e)
            verdict["online"] = m.summary()

        t_clean, t_bad, t_online = timed(clean), timed(violation), timed(online)
        good = (
            verdict["clean"]
            and verdict["flagged"]
            and verdict["online"]["violations"] == 0
            and verdict["online"]["unchecked_parts"] == 0
        )
        ok &= good
        print(
            f"{calls:6d} {n:7d} {n / t_parse:11.0f} {n / t_clean:12.0f} {len(bad) / t_bad:15.0f} "
            f"{n / t_online:12.0f}" + ("" if good else f"   WRONG VERDICT {verdict}")
        )
    evs = make_trace(args.online_calls, args.progress)
    m = Monitor()
    t = timed(lambda: [m.feed(e) for e in evs])
    s = m.summary()
    ok &= s["violations"] == 0 and s["unchecked_parts"] == 0
    print(
        f"online check alone, one session of {args.online_calls} calls: {len(evs)} events, "
        f"{len(evs) / t:.0f} events/s, {1e6 * t / args.online_calls:.0f} us per call; counts {s}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
