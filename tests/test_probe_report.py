"""The probe's report forms (pure, on recorded runs): JUnit XML for every outcome of a scenario,
the :class:`Report` object the in-process probe returns, the table of scenarios, and
``--junit-xml`` from the command line when the target cannot be tested at all."""

from __future__ import annotations

import subprocess
import sys
from xml.etree import ElementTree as ET

from test_probe import CAL, own_run, post, prog, steps

from mcp_inflight import probe as P


def cases(xml: str) -> dict:
    root = ET.fromstring(xml)
    out = {}
    for c in root.iter("testcase"):
        outcome = next((x for x in c if x.tag in ("failure", "error", "skipped")), None)
        key = c.get("classname").rsplit(".", 1)[-1] + "." + c.get("name")
        out[key] = (
            None if outcome is None else (outcome.tag, outcome.get("message"), outcome.text or "")
        )
    return root, out


def sample_report():
    """duplicate_progress with defects, collateral_close not judged (failed control), and
    server_request_routing not applicable."""
    control = own_run(11, 12)
    a = post("A", 11, 0.0, steps("tA", 0.0, n=2), token="tA", how="timeout", end=6.0)
    b = post(
        "B", 11, 1.0, [(1.5, prog("tA", 3))], token="tB", sender="rogue", how="timeout", end=6.0
    )
    dup = P.judge(
        "duplicate_progress", control, {"posts": [a, b], "cancels": [], "aborts": []}, CAL
    )
    broken = own_run(61, 62)
    broken["posts"][1]["events"] = broken["posts"][1]["events"][:1]
    broken["posts"][1]["how"] = "timeout"
    broken["aborts"] = [{"t": 0.7, "post": "A"}]
    cc = P.judge("collateral_close", broken, own_run(61, 61), CAL)
    assert dup.findings and cc.status == "not_judged"
    return P.summarize(
        "http://x/mcp", [dup, cc], {"server_request_routing": "no eliciting tool"}, CAL
    )


def test_junit_has_a_case_per_scenario_and_class_with_each_outcome():
    report = sample_report()
    root, got = cases(P.junit_xml(report))
    assert set(got) == ({f"scenario.{s}" for s in P.SCENARIOS} | {f"class.{c}" for c in P.CLASSES})
    kind, message, text = got["scenario.duplicate_progress"]
    assert kind == "failure" and "misrouted_notification" in message and "carried" in text
    kind, message, _ = got["scenario.collateral_close"]
    assert kind == "error" and message.startswith("not judged: the control run")
    assert got["scenario.server_request_routing"][:2] == (
        "skipped",
        "not applicable: no eliciting tool",
    )
    assert got["scenario.reuse"][:2] == ("skipped", "not run")
    kind, message, text = got["class.misrouted_notification"]
    evidence = next(
        f["evidence"] for f in report["findings"] if f["class"] == "misrouted_notification"
    )
    assert kind == "failure" and text.splitlines() == evidence
    assert got["class.reuse_refused"] is None
    suite = root.find("testsuite")
    assert suite.get("tests") == str(len(P.SCENARIOS) + len(P.CLASSES))
    assert int(suite.get("failures")) == sum(1 for v in got.values() if v and v[0] == "failure")
    assert suite.get("errors") == "1"


def test_junit_of_a_target_that_could_not_be_tested():
    report = P.untested("http://x/mcp", "no session: refused")
    _, got = cases(P.junit_xml(report))
    assert all(
        got[f"scenario.{s}"][:2] == ("error", "could not test: no session: refused")
        for s in P.SCENARIOS
    )
    assert all(got[f"class.{c}"][0] == "skipped" for c in P.CLASSES)


def test_cli_writes_junit_when_it_cannot_test(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    path = tmp_path / "probe.xml"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_inflight",
            "probe",
            f"http://127.0.0.1:{port}/mcp",
            "--quiet",
            "--junit-xml",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "COULD NOT TEST: no session" in p.stdout
    _, got = cases(path.read_text())
    assert got["scenario.duplicate_progress"][0] == "error"


def test_report_object_truth_repr_and_text():
    r = P.Report(sample_report())
    assert not r and r.clean is False and r.status == "defects" and r.exit == 1
    assert r.found == ["misrouted_notification", "lost_response"]
    assert repr(r) == ("<Report DEFECTS: misrouted_notification, lost_response>")
    assert set(r.evidence) == set(r.found) and "collateral_close" in r.not_judged
    assert "DEFECTS FOUND" in r.text() and r.junit_xml().startswith("<?xml")
    clean = P.summarize(
        "http://x/mcp",
        [P.judge("duplicate_progress", own_run(11, 12), own_run(11, 11), CAL)],
        cal=CAL,
    )
    assert P.Report(clean) and repr(P.Report(clean)) == "<Report clean>"
    gone = P.Report(P.untested("http://x/mcp", "tool missing: no slow"))
    assert not gone and repr(gone) == "<Report COULD NOT TEST: tool missing: no slow>"


def test_the_scenario_table_is_the_scenario_list():
    # the collision scenarios are the table's; the stream scenarios have runners of their own
    assert tuple(P.TABLE) + ("two_elicitations", "replay_routing") == P.SCENARIOS
    for name, sc in P.TABLE.items():
        a, b = sc.test_ids
        ca, cb = sc.control_ids
        if name == "id_types":  # two different ids that a sloppy server confuses
            assert a != b and str(a) == str(b) and str(ca) != str(cb)
        else:  # the test collides, the control does not
            assert a == b and ca != cb
