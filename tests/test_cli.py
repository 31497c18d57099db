"""The command line as a user meets it: exit codes, JSON, JUnit, usage errors."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def cli(*args):
    return subprocess.run([sys.executable, "-m", "mcp_inflight", *args], capture_output=True, text=True)


def test_check_passes_on_atomic_and_prints_one_json_object():
    p = cli("check", "--revision", "2026-07-28", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is True
    assert len(doc["runs"]) == 2
    run = doc["runs"][0]
    for key in ("design", "revision", "transport", "bounds", "symmetry", "states", "transitions",
                "seconds", "invariants", "witnesses", "hazards", "coverage"):
        assert key in run
    assert run["bounds"] == {"ids": 2, "requests": 2}
    inv = {v["name"]: v for v in run["invariants"]}
    assert inv["no_misrouted_server_request"]["applies"] is False
    assert all(set(v) == {"name", "applies", "holds", "trace"} for v in run["invariants"])
    assert all(set(v) == {"name", "applies", "reached", "trace"} for v in run["witnesses"])


def test_check_fails_on_unguarded_with_traces_and_junit(tmp_path):
    junit = tmp_path / "r.xml"
    p = cli("check", "--design", "unguarded", "--revision", "2026-07-28", "--transport", "http",
            "--junit-xml", str(junit))
    assert p.returncode == 1
    assert "counterexample: unique_in_flight" in p.stdout
    assert "FAILED" in p.stdout
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures")) >= 5
    assert int(suite.get("tests")) == len(suite.findall("testcase"))


def test_bad_arguments_exit_2_with_a_clear_message():
    p = cli("check", "--design", "nope")
    assert p.returncode == 2
    assert "valid: atomic, unguarded, check_then_claim, all" in p.stderr
    assert cli("check", "--ids", "0").returncode == 2
    assert cli("frobnicate").returncode == 2


def test_max_states_makes_an_incomplete_run_fail():
    p = cli("check", "--revision", "2026-07-28", "--transport", "http", "--max-states", "50")
    assert p.returncode == 1
    assert "INCOMPLETE" in p.stdout
