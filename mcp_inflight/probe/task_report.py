"""The task probe's rules and report (pure): each scenario's rule with its source, what each
transport lets it judge, the JSON report in the shape of :func:`.report.summarize` and its
text.

One table of scenarios runs over every form of the probe (a URL, an ASGI app in-process, a
stdio command); only who "another client" is differs.  Over HTTP it is another session of the
same endpoint.  A stdio server has one client per process, so there it is a second process of
the same command, and what can be judged changes with it: :data:`STDIO_SCOPE` says, per
scenario, what a stdio server is judged on and what it cannot be.
"""

from __future__ import annotations

from typing import Any

from .records import TASK_CLASSES, TASK_SCENARIOS, show

SOURCE = "MCP 2025-11-25, basic/utilities/tasks"
RULES = {
    "task_isolation": f"a task is bound to its requester's context: another session may not "
    f"read, take the result of, list or cancel it ({SOURCE}, Security Considerations: task "
    f"isolation and access control)",
    "task_guessing": f"ids another session can guess must not reach a task that is not its "
    f"own ({SOURCE}, Security Considerations: task ids and access control)",
    "task_ids": f"task ids must not be guessable: not derived from the request id, not "
    f"sequential ({SOURCE}, Security Considerations: unguessable task ids)",
    "task_terminal": f"a task in a terminal status (completed, failed, cancelled) does not move "
    f"to another; a cancel of a terminal task is refused ({SOURCE}, Task Status lifecycle and "
    f"Cancelling Tasks)",
}


#: who client B is, by transport
OTHER_CLIENT = {
    "http": "client A makes tasks; client B is another session (its own Mcp-Session-Id, the "
    "same headers)",
    "stdio": "client A makes tasks; client B is a second process of the same command (a stdio "
    "server has one client per process)",
}
#: over stdio, what each scenario judges and what it cannot
STDIO_SCOPE = {
    "task_isolation": "judged: a task id of process 1 must be unknown in process 2 (no status, "
    "no result, not listed, no cancel), which fails where processes share a task store keyed by "
    "id alone (a file, a database); not judged: two clients of one process, which a stdio server "
    "never has",
    "task_guessing": "judged: guesses sent to process 2 must not reach process 1's task; not "
    "judged: guesses within one process, whose one client is the requester of every task there",
    "task_ids": "judged within one process, as over HTTP: the rule is on the ids themselves, "
    "which matter wherever a store is shared by processes or outlives one",
    "task_terminal": "judged within one process, as over HTTP",
}
assert tuple(RULES) == tuple(STDIO_SCOPE) == TASK_SCENARIOS


def summarize_tasks(
    target: Any, verdicts: list, skipped: dict, cal: Any, transport: str = "http"
) -> dict:
    """The report, in the shape of :func:`.report.summarize` over :data:`TASK_CLASSES`, with
    each scenario's rule and source under ``rules``, and over stdio what it judges under
    ``scope``."""
    findings = []
    for cls in TASK_CLASSES:
        ev = [e for v in verdicts for c, e in v.findings if c == cls]
        findings.append({"class": cls, "found": bool(ev), "evidence": ev})
    not_judged = [v for v in verdicts if v.status != "judged"]
    scope = STDIO_SCOPE if transport == "stdio" else {}
    found = any(f["found"] for f in findings)
    status = "defects" if found else ("untested" if not_judged or not verdicts else "clean")
    return {
        "kind": "tasks",
        "transport": transport,
        "other_client": OTHER_CLIENT[transport],
        "ok": status == "clean",
        "target": target,
        "findings": findings,
        "refusal": None,
        "status": status,
        "exit": {"clean": 0, "defects": 1, "untested": 2}[status],
        "scenarios": [
            dict(v.to_json(), rule=RULES[v.scenario], scope=scope.get(v.scenario)) for v in verdicts
        ],
        "not_applicable": skipped,
        "calibration": cal,
        "planned": list(TASK_SCENARIOS),
        "rules": RULES,
    }


def render_tasks(report: dict) -> str:
    """The text of a task probe's report."""
    lines = [f"mcp-inflight probe {report['target']} (tasks, 2025-11-25)"]
    cal = report.get("calibration")
    if cal:
        lines.append(f"  task tool {cal['tool']} {show(cal['args'])}: {cal['duration']:.2f}s")
    other = report.get("other_client") or OTHER_CLIENT["http"]
    lines += ["", f"Scenarios ({other})"]
    for s in report["scenarios"]:
        mark = (
            "not judged" if s["status"] != "judged" else ("defects" if s["findings"] else "clean")
        )
        lines.append(f"  {s['scenario']:<16} {mark}")
        lines.append(f"      rule: {s['rule']}")
        if s.get("scope"):
            lines.append(f"      over stdio: {s['scope']}")
        if s["note"]:
            lines.append(f"      {s['note']}")
    for name, why in report.get("not_applicable", {}).items():
        lines.append(f"  {name:<16} n/a  {why}")
    lines += ["", "Defect classes"]
    for f in report["findings"]:
        lines.append(f"  {f['class']:<28} {'FOUND' if f['found'] else 'not found'}")
        lines += [f"      - {e}" for e in f["evidence"]]
    lines.append("")
    found = ", ".join(f["class"] for f in report["findings"] if f["found"])
    lines.append(
        {
            "clean": "CLEAN: no defect class found, every task scenario judged",
            "defects": "DEFECTS FOUND: " + found,
            "untested": "COULD NOT TEST every task scenario (see above); no defect found in the rest",
        }[report["status"]]
    )
    return "\n".join(lines)
