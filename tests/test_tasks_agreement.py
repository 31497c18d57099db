"""impl/tasks.py against model/tasks.py: the store takes every explored transition of
``fresh-bound`` and ends in the state the model says (each task's status, whether its work runs,
whether a 2026-07-28 cancellation is pending), answers the requester's methods as the model
does, refuses every call on another client's task id, and sends exactly one
``notifications/tasks/status`` per status change, to the owner.  Driven with the moves of a
mutant, the same store disagrees somewhere: the test can fail."""

from __future__ import annotations

import dataclasses

import pytest

from mcp_inflight.impl.tasks import NotReady, TaskError, TaskStore
from mcp_inflight.model import tasks as M
from mcp_inflight.proofs.small import drive

STATUS = {
    M.WORKING: "working",
    M.INPUT: "input_required",
    M.COMPLETED: "completed",
    M.FAILED: "failed",
    M.CANCELLED: "cancelled",
}
REV = ("2025-11-25", "2026-07-28")


class World:
    def __init__(self) -> None:
        self.store = TaskStore(max_ttl_ms=60_000)
        self.ids: dict[int, str] = {}  # model slot -> task id

    def copy(self) -> World:
        w = World.__new__(World)
        w.store = TaskStore(
            self.store.max_ttl_ms,
            {k: dataclasses.replace(t) for k, t in self.store.tasks.items()},
            [],
            set(self.store.ended),
        )
        w.ids = dict(self.ids)
        return w


def owner(c: int) -> str:
    return f"c{c}"


def step(seen: set[str]):
    def run(w: World, pre, m, post) -> list[str]:
        st, k = w.store, m.kw
        out: list[str] = []
        st.outbox.clear()

        def refused(call) -> bool:
            try:
                call()
            except TaskError:
                return True
            return False

        if m.name == "create":
            r = k["r"]
            t = st.create(owner(pre.who[r]), REV[pre.rev[r]], None if pre.nottl[r] else 30_000)
            w.ids[r] = t.task_id
            if t.ttl_ms != (60_000 if pre.nottl[r] else 30_000):
                out.append(f"ttl {t.ttl_ms}")
        elif m.name == "ask":
            st.ask(w.ids[k["r"]])
        elif m.name == "finish":
            st.finish(w.ids[k["r"]], bool(k["ok"]), {"r": k["r"]})
        elif m.name == "honour":
            st.honour(w.ids[k["r"]])
        elif m.name == "expire":
            st.expire(w.ids[k["r"]])
        elif m.name == "end":
            st.end_session(owner(k["c"]))
        elif m.name in ("read", "answer", "tcancel"):
            r = k["r"]
            who, tid = owner(pre.who[r]), w.ids[r]
            gone = pre.ts[r] == M.GONE
            # the model hands the result out unless a result-once server has forgotten it
            kept = pre.rgone[r] == 0
            if m.name == "read" and k["op"] == M.GET:
                try:
                    got = st.get(who, tid)
                    seen.add("get")
                    if gone or got["status"] != STATUS[pre.ts[r]]:
                        out.append(f"tasks/get answered {got['status']}")
                    if pre.rev[r] == M.NEW and pre.ts[r] == M.COMPLETED:
                        if ("result" in got) != kept:
                            out.append("tasks/get and the model disagree on the result")
                except TaskError:
                    if not gone:
                        out.append("tasks/get refused a live task")
            elif m.name == "read":
                try:
                    res = st.result(who, tid)
                    seen.add("result")
                    if gone or not kept:
                        out.append("tasks/result answered where the model has no result")
                    elif pre.ts[r] != M.CANCELLED and res != {"r": r}:
                        out.append(f"tasks/result answered {res}")
                except TaskError:
                    if not gone:
                        out.append("tasks/result refused")
                except NotReady:
                    out.append("tasks/result not ready on a terminal task")
            elif m.name == "answer":
                st.answer(who, tid)
            else:
                try:
                    st.cancel(who, tid)
                except TaskError:
                    seen.add("cancel refused")
                    if not (gone or pre.ts[r] in M.TERMINAL):
                        out.append("tasks/cancel refused a live task")
        elif m.name == "list":
            c = k["c"]
            listed = {t["taskId"] for t in st.list(owner(c))}
            want = set()
            if not pre.ended[c]:
                want = {
                    w.ids[x]
                    for x in range(len(pre.ts))
                    if pre.who[x] == c
                    and pre.rev[x] == M.OLD
                    and pre.ts[x] not in (M.NOTASK, M.GONE)
                }
            if listed != want:
                out.append(f"tasks/list gave {len(listed)} tasks, the model {len(want)}")
        elif m.name == "foreign":
            x = pre.tab[k["k"]]
            call = {
                M.GET: lambda: st.get(owner(k["c"]), w.ids[x]),
                M.RESULT: lambda: st.answer(owner(k["c"]), w.ids[x]),
                M.CANCEL: lambda: st.cancel(owner(k["c"]), w.ids[x]),
            }[k["op"]]
            if refused(call):
                seen.add("foreign refused")
            else:
                out.append(f"{M.OPS[k['op']]} by c{k['c']} on another's task accepted")
        # the state the model says
        sent = []
        for x, tid in w.ids.items():
            t = st.tasks.get(tid)
            if post.ts[x] == M.GONE:
                if t is not None:
                    out.append(f"r{x}'s task is still stored")
                continue
            if t is None:
                out.append(f"r{x}'s task is gone")
                continue
            if t.status != STATUS[post.ts[x]]:
                out.append(f"r{x}: {t.status}, the model {STATUS[post.ts[x]]}")
            if t.running != bool(post.wrun[x]) or t.cancel_requested != bool(post.creq[x]):
                out.append(f"r{x}: running {t.running}, cancel requested {t.cancel_requested}")
            if pre.ts[x] not in (M.NOTASK, post.ts[x]):
                sent.append((owner(post.who[x]), tid, STATUS[post.ts[x]]))
        got = [(o, v["taskId"], v["status"]) for o, v in st.outbox]
        if sorted(got) != sorted(sent):
            out.append(f"status notifications {got}, the model {sent}")
        if got:
            seen.add("notified")
        return out

    return run


def test_the_store_agrees_with_fresh_bound_on_every_transition():
    seen: set[str] = set()
    problems = drive(M.spec("fresh-bound"), World, step(seen), World.copy)
    assert problems == []
    # not vacuous: every kind of answer was compared somewhere
    assert seen == {"get", "result", "cancel refused", "foreign refused", "notified"}


@pytest.mark.parametrize("design", ["not-sticky", "global", "result-once"])
def test_the_store_disagrees_with_a_mutant(design):
    problems = drive(M.spec(design), World, step(set()), World.copy)
    assert problems
