"""The stdio probe's scenarios as one table (:data:`STDIO_TABLE`) and their verdicts from
recorded runs (:func:`judge_stdio`): pure, so that each rule is tested on hand-made runs without
a process.  Why these scenarios and not the others of the HTTP probe: :mod:`.stdio`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .judging import Verdict
from .records import (
    ATTRIBUTE,
    INVALID_REQUEST,
    STDIO_SCENARIOS,
    error_of,
    is_response,
    is_success,
    progress_token,
    same_id,
    show,
)

STDIO_NOT_APPLICABLE = {
    "response_routing": "stdio has one channel: a response is told from another by its id only",
    "server_request_routing": "stdio has one channel: no request of the server can take "
    "another request's stream",
    "collateral_close": "stdio has one connection for every request: none can be closed alone",
    "replay_routing": "stdio has no resumption",
    "two_elicitations": "not run over stdio",
}


@dataclass(frozen=True)
class StdioScenario:
    """One row: ids of the control and the test; when B is sent (``half`` or ``first`` of A's
    progress, or ``answered``); ``cancel``: a cancel under A's id, meaning A, once B runs."""

    name: str
    control_ids: tuple
    test_ids: tuple
    b_sender: str
    b_when: str
    cancel: bool = False


STDIO_TABLE = {
    s.name: s
    for s in (
        StdioScenario("duplicate_progress", (11, 12), (11, 11), "rogue", "half"),
        StdioScenario("cancel_routing", (31, 32), (31, 31), "rogue", "first", cancel=True),
        StdioScenario("id_types", (8, "9"), (7, "7"), "client", "half"),
        StdioScenario("id_types_cancel", (6, "5"), (4, "4"), "client", "first", cancel=True),
        StdioScenario("reuse", (71, 72), (71, 71), "client", "answered"),
    )
}
assert tuple(STDIO_TABLE) == STDIO_SCENARIOS


# --- reading a recorded stdio run (pure) --------------------------------------------------------


def _progress(run: dict, token: Any) -> list[float]:
    return [e["t"] for e in run["received"] if progress_token(e["msg"]) == token]


def _responses(run: dict) -> list[dict]:
    return [e for e in run["received"] if is_response(e["msg"])]


def _request(run: dict, name: str) -> dict:
    return next(r for r in run["requests"] if r["name"] == name)


def stdio_refusal(run: dict, req: dict) -> dict | None:
    """An Invalid Request error under the request's id, or with ``id: null`` naming it in
    ``data`` (or naming nothing), that came after it was sent."""
    for e in _responses(run):
        err = error_of(e["msg"])
        if err is None or e["t"] < req["sent"] or err.get("code") != INVALID_REQUEST:
            continue
        rid = e["msg"].get("id")
        data = err.get("data")
        named = data.get("id") if isinstance(data, dict) and "id" in data else rid
        if (rid is None or same_id(rid, req["id"])) and (
            named is None or same_id(named, req["id"])
        ):
            return {
                "status": None,
                "code": err.get("code"),
                "message": err.get("message"),
                "id": rid,
            }
    return None


def _typed(run: dict, rid: Any) -> list[dict]:
    return [e for e in _responses(run) if same_id(e["msg"].get("id"), rid)]


def _control_problems(run: dict, cal: dict, sc: StdioScenario) -> list[str]:
    out = []
    a, b = _request(run, "A"), _request(run, "B")
    for req in (a, b):
        if sc.cancel and req is a:
            continue
        rs = _typed(run, req["id"])
        if not rs or not is_success(rs[-1]["msg"]):
            got = show(rs[-1]["msg"])[:200] if rs else "nothing"
            out.append(f"{req['name']} (id {show(req['id'])}) got {got}, not a result")
        n = len(_progress(run, req["token"]))
        if n < cal["steps"]:
            out.append(f"{req['name']} reported {n} of {cal['steps']} progress notifications")
    if sc.cancel:
        n = len(_progress(run, a["token"]))
        if n >= cal["steps"] or any(is_success(e["msg"]) for e in _typed(run, a["id"])):
            out.append(
                f"A (id {show(a['id'])}) ran on after the cancel for its own id ({n} of "
                f"{cal['steps']} progress notifications): the server does not stop a cancelled "
                f"request, so a misdirected cancel cannot be told"
            )
    if run.get("unparsable"):
        out.append(f"stdout carried lines that are not JSON: {run['unparsable'][0]!r}")
    return out


def judge_stdio(name: str, control: dict, test: dict, cal: dict) -> Verdict:
    """The verdict of one stdio scenario from its two runs."""
    sc = STDIO_TABLE[name]
    v = Verdict(name)
    problems = _control_problems(control, cal, sc)
    if problems:
        v.status = "not_judged"
        v.note = "the control run (distinct ids) failed: " + "; ".join(problems)
        return v
    a, b = _request(test, "A"), _request(test, "B")
    steps = cal["steps"]
    ref = stdio_refusal(test, b) if sc.b_sender == "rogue" else None
    v.refusal = ref
    prog_a, prog_b = _progress(test, a["token"]), _progress(test, b["token"])
    types = name.startswith("id_types")

    def cls(c: str) -> str:
        return "id_type_confusion" if types else c

    if sc.b_sender == "client":
        wrong = stdio_refusal(test, b)
        if wrong is not None and not (name == "reuse" and not _typed(test, a["id"])):
            v.add(
                "reuse_refused" if name == "reuse" else "id_type_confusion",
                f"B (id {show(b['id'])}) was refused ({show(wrong['message'])}) though "
                + (
                    f"A (same id) had been answered at {_typed(test, a['id'])[0]['t']:.2f}s"
                    if name == "reuse"
                    else f"only A's id {show(a['id'])}, a different one, was in flight"
                ),
            )
            return v
    if ref is not None and prog_b:
        v.add(
            "misrouted_notification",
            f"B (id {show(b['id'])}) was refused, yet {len(prog_b)} progress notification(s) "
            f"for its token came from {prog_b[0]:.2f}s",
        )
    if sc.cancel:
        cancel_t = test["cancels"][0]["t"] if test["cancels"] else None
        late = [t for t in prog_a if cancel_t is not None and t > cancel_t + 0.05]
        if len(prog_a) >= steps:
            v.add(
                cls("cancel_misdirected"),
                f"A (id {show(a['id'])}) ran all {steps} steps though the cancel for its id came "
                f"at {cancel_t:.2f}s"
                + (f" ({len(late)} of its progress notifications after it)" if late else ""),
            )
        if ref is None and len(prog_b) < steps:
            v.add(
                cls("cancel_misdirected"),
                f"B (id {show(b['id'])}, never cancelled) stopped at {len(prog_b)} of {steps} "
                f"progress notifications after the cancel meant for A at {cancel_t:.2f}s",
            )
    # the responses: every admitted, uncancelled request needs one success under its own id
    need = [r for r in (a, b) if not (r is b and ref is not None) and not (sc.cancel and r is a)]
    if same_id(a["id"], b["id"]):
        got = [e for e in _typed(test, a["id"]) if is_success(e["msg"])]
        if sc.cancel and ref is None and len(prog_b) >= steps:
            # one result expected: B's; one that came before B could have finished is A's
            floor = b["sent"] + ATTRIBUTE * cal["duration"]
            early = [e for e in got if e["t"] < floor]
            for e in early:
                v.add(
                    "misrouted_response",
                    f"a result under id {show(a['id'])} came at {e['t']:.2f}s, before B (sent at "
                    f"{b['sent']:.2f}s) could have finished: it is A's, which was cancelled",
                )
        if len(got) < len(need):
            v.add(
                "lost_response",
                f"{len(need)} request(s) under id {show(a['id'])} were admitted and not "
                f"cancelled; {len(got)} result(s) came under that id"
                + (f" (A ran {len(prog_a)}, B {len(prog_b)} of {steps} steps)" if need else ""),
            )
    else:
        hit_b = sc.cancel and ref is None and len(prog_b) < steps  # told above
        for r in need:
            own = [e for e in _typed(test, r["id"]) if is_success(e["msg"])]
            if not own and not (r is b and hit_b):
                v.add(cls("lost_response"), f"{r['name']} (id {show(r['id'])}) got no result")
        for r in (a, b):
            own = [e for e in _typed(test, r["id"]) if is_success(e["msg"])]
            if len(own) > 1:
                v.add(
                    cls("misrouted_response"),
                    f"{len(own)} results came under id {show(r['id'])} (at "
                    + ", ".join(f"{e['t']:.2f}s" for e in own)
                    + "), which only one request had",
                )
        if len(prog_b) < steps and not sc.cancel:
            v.add(
                cls("lost_response"),
                f"B (id {show(b['id'])}) reported {len(prog_b)} of {steps} progress notifications",
            )
    if name == "reuse":
        own = [e for e in _typed(test, b["id"]) if is_success(e["msg"]) and e["t"] > b["sent"]]
        if not own:
            v.add("lost_response", f"B (id {show(b['id'])}, reused after A's answer) got no result")
    return v
