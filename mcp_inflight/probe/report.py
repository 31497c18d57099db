"""The probe's report: the JSON document built from the verdicts, its text rendering, its JUnit
XML form, and :class:`Report`, the object :func:`mcp_inflight.probe.probe_app` returns.

The JSON document (``--json``) is ``{"ok", "target", "findings": [{"class", "found",
"evidence"}], "refusal", "status", "exit", "scenarios", "not_applicable", "calibration",
"seconds"}``; when the target could not be tested at all it is ``{"ok": false, "target",
"findings", "refusal": null, "status": "untested", "exit": 2, "reason"}``.
"""

from __future__ import annotations

from typing import Any

from .records import CLASS_HELP, CLASSES, SCENARIOS, describe_refusal


def summarize(target: Any, verdicts: Any, skipped: Any = None, cal: Any = None) -> dict:
    """The report: ``{"ok", "target", "findings", "refusal", ...}``.

    ``ok`` is true only when no class was found and every scenario was judged; a scenario that
    does not apply (``skipped``, e.g. no eliciting tool) is listed with its reason.
    """
    skipped = skipped or {}
    findings = []
    for cls in CLASSES:
        ev = [e for v in verdicts for c, e in v.findings if c == cls]
        findings.append({"class": cls, "found": bool(ev), "evidence": ev})
    refusal = None
    for v in verdicts:
        if v.refusal is not None:
            refusal = dict(v.refusal, scenario=v.scenario)
            break
    not_judged = {v.scenario: v.note for v in verdicts if v.status != "judged"}
    found = any(f["found"] for f in findings)
    status = "defects" if found else ("untested" if not_judged or not verdicts else "clean")
    return {
        "ok": status == "clean",
        "target": target,
        "findings": findings,
        "refusal": refusal,
        "status": status,
        "exit": {"clean": 0, "defects": 1, "untested": 2}[status],
        "scenarios": [v.to_json() for v in verdicts],
        "not_applicable": skipped,
        "calibration": cal,
    }


def render_text(report: Any) -> str:
    how = report.get("revision") or report.get("transport")
    lines = [f"mcp-inflight probe {report['target']}" + (f" ({how})" if how else "")]
    cal = report.get("calibration") or {}
    if cal:
        lines.append(
            f"  tool {cal['tool']}: {cal['steps']} progress notifications in "
            f"{cal['duration']:.2f}s"
            + (
                f"; {cal['elicit_tool']}: {cal['elicits']} elicitation(s) after "
                f"{cal['elicit_after']:.2f}s"
                if cal.get("elicits")
                else ""
            )
        )
    lines.append("")
    lines.append("Scenarios (each after a control run with distinct ids)")
    for s in report["scenarios"]:
        mark = (
            "not judged" if s["status"] != "judged" else ("defects" if s["findings"] else "clean")
        )
        extra = ""
        if s["refusal"] is not None:
            extra = f"  duplicate refused: {describe_refusal(s['refusal'])}"
        lines.append(f"  {s['scenario']:<24} {mark}{extra}")
        if s["status"] != "judged":
            lines.append(f"      {s['note']}")
    for name, why in report.get("not_applicable", {}).items():
        lines.append(f"  {name:<24} n/a  {why}")
    if report.get("contract"):
        lines.append(f"  fixture contract: {report['contract']}")
    lines.append("")
    lines.append("Defect classes")
    for f in report["findings"]:
        lines.append(f"  {f['class']:<26} {'FOUND' if f['found'] else 'not found'}")
        for e in f["evidence"]:
            lines.append(f"      - {e}")
    lines.append("")
    ref = report["refusal"]
    lines.append(
        "Duplicate of an in-flight id: "
        + (
            f"refused with {describe_refusal(ref)}"
            if ref
            else "never refused (admitted, or not tested)"
        )
    )
    found = ", ".join(f["class"] for f in report["findings"] if f["found"])
    msg = {
        "clean": "CLEAN: no defect class found, every scenario judged",
        "defects": "DEFECTS FOUND: " + found,
        "untested": "COULD NOT TEST every scenario (see the notes above); "
        "no defect found in the rest",
    }
    lines.append(msg[report["status"]])
    return "\n".join(lines)


def untested(target: str, reason: str) -> dict:
    """The report of a target that could not be probed at all (no session, tool missing, ...)."""
    return {
        "ok": False,
        "target": target,
        "findings": [{"class": c, "found": False, "evidence": []} for c in CLASSES],
        "refusal": None,
        "status": "untested",
        "exit": 2,
        "reason": reason,
    }


def render_untested(report: dict) -> str:
    return f"mcp-inflight probe {report['target']}\nCOULD NOT TEST: {report['reason']}"


def render(report: dict) -> str:
    """The text of either kind of report (a task probe's has its own, :mod:`.task_report`)."""
    if "reason" in report:
        return render_untested(report)
    if report.get("kind") == "tasks":
        from .task_report import render_tasks

        return render_tasks(report)
    return render_text(report)


def verdicts(report: dict) -> dict:
    """What two probes of one server must agree on, whatever their timings: the status, the
    classes found, and per scenario its status, its classes and the refusal's HTTP status and
    JSON-RPC code (used to compare the in-process probe with the URL probe)."""
    return {
        "status": report["status"],
        "found": sorted(f["class"] for f in report["findings"] if f["found"]),
        "scenarios": {
            s["scenario"]: (
                s["status"],
                sorted({f["class"] for f in s["findings"]}),
                (s["refusal"] or {}).get("status"),
                (s["refusal"] or {}).get("code"),
            )
            for s in report.get("scenarios", [])
        },
    }


# --- JUnit XML --------------------------------------------------------------------------------


def junit_xml(report: dict, suite: str = "mcp-inflight probe") -> str:
    """The report as JUnit XML: one test case per scenario (``scenario.NAME``: a failure when it
    found defects, an error when it could not be judged, skipped when it does not apply) and one
    per defect class (``class.NAME``: a failure with the evidence lines when found).  A target
    that could not be tested at all gives an error in every scenario and skips every class."""
    from xml.etree import ElementTree as ET

    cases: list[ET.Element] = []

    def case(
        kind: str, name: str, outcome: str | None = None, message: str = "", text: str = ""
    ) -> None:
        el = ET.Element("testcase", classname=f"mcp_inflight.probe.{kind}", name=name, time="0")
        if outcome is not None:
            sub = ET.SubElement(el, outcome, message=message)
            if text:
                sub.text = text
        cases.append(el)

    planned = report.get("planned") or SCENARIOS  # another transport's or profile's list
    if "reason" in report:
        for name in planned:
            case("scenario", name, "error", f"could not test: {report['reason']}")
        for cls in CLASSES:
            case("class", cls, "skipped", "could not test")
    else:
        judged = {s["scenario"]: s for s in report["scenarios"]}
        for name in planned:
            s = judged.get(name)
            if s is None:
                why = report.get("not_applicable", {}).get(name)
                case("scenario", name, "skipped", f"not applicable: {why}" if why else "not run")
            elif s["status"] != "judged":
                case("scenario", name, "error", f"not judged: {s['note']}")
            elif s["findings"]:
                found = sorted({f["class"] for f in s["findings"]}, key=list(CLASS_HELP).index)
                case(
                    "scenario",
                    name,
                    "failure",
                    "defects: " + ", ".join(found),
                    "\n".join(f"{f['class']}: {f['evidence']}" for f in s["findings"]),
                )
            else:
                case("scenario", name)
        for f in report["findings"]:
            if f["found"]:
                case(
                    "class", f["class"], "failure", CLASS_HELP[f["class"]], "\n".join(f["evidence"])
                )
            else:
                case("class", f["class"])
    counts = {
        k: sum(1 for c in cases if c.find(k) is not None) for k in ("failure", "error", "skipped")
    }
    root = ET.Element("testsuites")
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(counts["failure"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
        time=str(report.get("seconds", 0)),
    )
    props = ET.SubElement(ts, "properties")
    ET.SubElement(props, "property", name="target", value=str(report["target"]))
    ET.SubElement(props, "property", name="status", value=str(report["status"]))
    ts.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- the object probe_app returns -------------------------------------------------------------


class Report:
    """One probe's outcome.  ``clean`` is true only when no defect class was found and every
    scenario was judged; ``bool(report)`` is ``clean``.  ``doc`` is the JSON document (the same
    as ``mcp-inflight probe --json``), ``records`` what every POST's stream received.

    Its ``repr`` names the status and the classes found (short enough for an assertion line);
    :meth:`text` is the full rendering with every evidence line."""

    def __init__(self, doc: dict, records: dict | None = None) -> None:
        self.doc = doc
        self.records = records or {}

    @property
    def status(self) -> str:
        """``clean``, ``defects`` or ``untested``."""
        return str(self.doc["status"])

    @property
    def clean(self) -> bool:
        return self.doc["status"] == "clean"

    @property
    def exit(self) -> int:
        return int(self.doc["exit"])

    @property
    def found(self) -> list[str]:
        """The defect classes found, in the order of ``CLASSES``."""
        return [f["class"] for f in self.doc["findings"] if f["found"]]

    @property
    def evidence(self) -> dict[str, list[str]]:
        """The evidence lines of every class found."""
        return {f["class"]: list(f["evidence"]) for f in self.doc["findings"] if f["found"]}

    @property
    def reason(self) -> str | None:
        """Why the target could not be tested at all (None when it was probed)."""
        return self.doc.get("reason")

    @property
    def not_judged(self) -> dict[str, str]:
        """The scenarios that ran but could not be judged, with the reason."""
        return {
            s["scenario"]: s["note"]
            for s in self.doc.get("scenarios", [])
            if s["status"] != "judged"
        }

    def __bool__(self) -> bool:
        return self.clean

    def text(self) -> str:
        return render(self.doc)

    def junit_xml(self) -> str:
        return junit_xml(self.doc)

    def to_json(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        if self.status == "defects":
            return f"<Report DEFECTS: {', '.join(self.found)}>"
        if self.reason is not None:
            return f"<Report COULD NOT TEST: {self.reason[:160]}>"
        if self.status == "untested":
            return f"<Report COULD NOT TEST: not judged {', '.join(self.not_judged)}>"
        return "<Report clean>"
