"""The JSON the page shows: one view of a path at a position, built from ``model_api`` alone.

Successors are computed on demand: a view replays its path from the initial state (each prefix
is cached, so one more step costs one more transition) and evaluates every move's guard at the
current state.  Nothing needs the state graph, so a page opens at once on any configuration and
bound, and a URL replays after a restart; the exploration (``jobs.py``) is needed only for the
list of counterexamples, witnesses and hazards.
"""

from __future__ import annotations

from typing import Any

from mcp_inflight.web import model_api as api
from mcp_inflight.web.errors import BadRequest as BadRequest  # the pages' one query error
from mcp_inflight.web.errors import query_int

#: Largest bounds a query may ask for (a view is cheap at any bound; this keeps a mistyped
#: URL from building a state of thousands of slots).
MAX_IDS = 6
MAX_REQUESTS = 8


def config_of(q: dict[str, Any], defaults: dict[str, Any]) -> Any:
    """The configuration a query names, falling back on the server's defaults."""
    try:
        return api.config(
            q.get("design") or defaults["design"],
            q.get("revision") or defaults["revision"],
            q.get("transport") or defaults["transport"],
            query_int(q, "ids", defaults["ids"], 1, MAX_IDS),
            query_int(q, "requests", defaults["requests"], 1, MAX_REQUESTS),
        )
    except BadRequest:
        raise
    except ValueError as e:
        raise BadRequest(str(e)) from None


def tokens_of(q: dict) -> list[str]:
    raw = q.get("path") or ""
    return [t for t in raw.split("-") if t]


def meta(defaults: dict) -> dict:
    return {
        "designs": [{"name": n, "knobs": d.describe()} for n, d in api.all_designs().items()],
        "revisions": api.revisions(),
        "transports": api.transports(),
        "defaults": defaults,
        "properties": api.properties(),
        "fields": api.fields(),
        "life": api.life_states(),
        "max": {"ids": MAX_IDS, "requests": MAX_REQUESTS},
    }


def _step_json(cfg: Any, st: Any) -> dict[str, Any]:
    return {
        "token": st.move.token,
        "action": st.move.action.name,
        "args": st.move.shown_args(),
        "side": st.move.action.side,
        "story": api.step_story(cfg, st),
        "changes": api.step_changes(st),
        "outputs": api.outputs(st),
        "breaks": api.breaks(cfg, st),
    }


def _enabled_rows(cfg: Any, succ: Any, nxt: Any) -> list[dict[str, Any]]:
    """The enabled moves, one row each, except that moves which differ only in an argument the
    story does not show (the session's end, taken "by" any of its requests) and lead to the same
    state are listed once; those that lead to different states say their arguments."""
    groups: dict[str, list] = {}
    for st in succ:
        groups.setdefault(api.step_story(cfg, st), []).append(st)
    keep: set[str] = set()
    named: set[str] = set()
    for steps in groups.values():
        distinct: dict[Any, Any] = {}
        # the move the path takes next stands for the others that reach its state
        for st in sorted(steps, key=lambda st: st.move.token != nxt):
            distinct.setdefault(st.post, st)
        keep |= {st.move.token for st in distinct.values()}
        if len(distinct) > 1:
            named |= {st.move.token for st in distinct.values()}
    rows = []
    for st in succ:
        if st.move.token not in keep:
            continue
        row = dict(_step_json(cfg, st), next=st.move.token == nxt)
        if st.move.token in named:
            shown = ", ".join(f"{k}={v}" for k, v in st.move.shown_args().items())
            row["story"] = f"{row['story']} ({shown})"
        rows.append(row)
    return rows


def view(q: dict, defaults: dict) -> dict:
    """The page at position ``at`` (default: the end) of ``path`` on the query's configuration.

    The whole path is replayed (and drawn), so steps ahead of ``at`` stay available to walk
    forward to; ``enabled`` and ``properties`` are those of the state at ``at``.
    """
    cfg = config_of(q, defaults)
    tokens = tokens_of(q)
    try:
        steps = api.replay(cfg, tokens)
    except api.PathError as e:
        raise BadRequest(str(e), e.step) from None
    at = query_int(q, "at", len(steps), 0, len(steps))
    here = steps[:at]
    s = here[-1].post if here else api.start(cfg)
    prev = here[-1].pre if here else None
    last = here[-1] if here else None
    succ = api.successors(cfg, s)
    nxt = steps[at].move.token if at < len(steps) else None
    return {
        "config": api.describe_config(cfg),
        "path": [_step_json(cfg, st) for st in steps],
        "at": at,
        "story": api.step_story(cfg, last) if last else "the initial state: nothing sent yet",
        "state": api.state_table(cfg, s, prev),
        "lifecycle": api.lifecycle(cfg, here),
        "enabled": _enabled_rows(cfg, succ, nxt),
        "properties": api.judge(cfg, s, last),
        "diagram": api.diagram(cfg, steps),
    }


def recorded(name: str, text: str) -> dict:
    """A recorded wire trace as the page lists it (``model_api.recorded``), refused with the
    reason when it cannot be read or needs more ids or instances than a view may ask for."""
    try:
        rec = api.recorded(name, text)
    except api.RecordedError as e:
        raise BadRequest(str(e)) from None
    run = rec["runs"][0]
    if run["ids"] > MAX_IDS or run["requests"] > MAX_REQUESTS:
        raise BadRequest(
            f"{name}: the trace has {run['requests']} request instances under {run['ids']} ids; "
            f"the page shows up to {MAX_REQUESTS} instances and {MAX_IDS} ids"
        )
    return rec
