"""The command line as a user meets it: exit codes, JSON, JUnit, usage errors."""

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from mcp_inflight.cli import main
from support.procs import alive, descendants

#: the profile both checkers fail on, with traces (2026-07-28 Streamable HTTP, unguarded)
UNGUARDED_HTTP = ("--design", "unguarded", "--revision", "2026-07-28", "--transport", "http")


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "mcp_inflight", *args], capture_output=True, text=True
    )


def test_check_passes_on_atomic_and_prints_one_json_object():
    p = cli("check", "--revision", "2026-07-28", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is True
    assert len(doc["runs"]) == 2
    run = doc["runs"][0]
    for key in (
        "design",
        "revision",
        "transport",
        "bounds",
        "symmetry",
        "states",
        "transitions",
        "seconds",
        "invariants",
        "witnesses",
        "hazards",
        "coverage",
    ):
        assert key in run
    assert run["bounds"] == {"ids": 2, "requests": 2}
    inv = {v["name"]: v for v in run["invariants"]}
    assert inv["no_misrouted_server_request"]["applies"] is False
    assert all(set(v) == {"name", "applies", "holds", "trace", "proof"} for v in run["invariants"])
    assert all(
        set(v) == {"name", "applies", "reached", "trace", "through"} for v in run["witnesses"]
    )


def test_check_fails_on_unguarded_with_traces_and_junit(tmp_path):
    junit = tmp_path / "r.xml"
    p = cli(
        "check",
        *UNGUARDED_HTTP,
        "--junit-xml",
        str(junit),
        "--no-prove",
    )
    assert p.returncode == 1
    assert "counterexample: unique_in_flight" in p.stdout
    assert "FAILED" in p.stdout
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures")) >= 5
    assert int(suite.get("tests")) == len(suite.findall("testcase"))


def test_bad_arguments_exit_2_with_a_clear_message():
    p = cli("check", "--design", "nope")
    assert p.returncode == 2
    assert "valid: atomic, unguarded, check_then_claim, fenced" in p.stderr
    assert cli("check", "--ids", "0").returncode == 2
    assert cli("frobnicate").returncode == 2


def test_max_states_makes_an_incomplete_run_fail():
    p = cli("check", "--revision", "2026-07-28", "--transport", "http", "--max-states", "50")
    assert p.returncode == 1
    assert "INCOMPLETE" in p.stdout


# --- the prover, alone and inside check ---------------------------------------------------------


def test_check_json_gives_each_invariant_its_proof():
    # stdio: one scope for every request, so every proof leans on the in-flight registry
    p = cli("check", "--revision", "2026-07-28", "--transport", "stdio", "--json")
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)["runs"][0]
    for v in run["invariants"]:
        if not v["applies"]:
            assert v["proof"] is None
            continue
        proof = v["proof"]
        assert set(proof) >= {"method", "proved", "seconds", "auxiliary", "cti", "trace"}
        assert proof["method"] == "induction" and proof["proved"] is True
        assert proof["cti"] is None and proof["trace"] is None
        assert "live_owns_inflight" in proof["auxiliary"]
    # the stale-cancel rule: an invariant on stdio (channel order), not a hazard there
    stale = {v["name"]: v for v in run["invariants"]}["stale_cancel_is_inert_in_order"]
    assert stale["proof"]["proved"] is True
    assert {v["name"]: v for v in run["hazards"]}["stale_cancel_is_inert"]["proof"] is None


def test_check_no_prove_keeps_the_explorer_output_as_it_was():
    p = cli("check", "--revision", "2026-07-28", "--json", "--no-prove")
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)["runs"][0]
    assert all(set(v) == {"name", "applies", "holds", "trace"} for v in run["invariants"])


def test_check_combined_table_and_no_explore():
    p = cli("check", "--revision", "2026-07-28", "--transport", "stdio")
    assert p.returncode == 0, p.stderr
    assert "explorer" in p.stdout and "PROVED" in p.stdout
    assert "holds      PROVED" in p.stdout
    q = cli("check", "--revision", "2026-07-28", "--transport", "stdio", "--no-explore", "--json")
    assert q.returncode == 0, q.stderr
    run = json.loads(q.stdout)["runs"][0]
    assert "states" not in run
    assert all(v["proof"]["proved"] for v in run["invariants"] if v["applies"])
    assert cli("check", "--no-prove", "--no-explore").returncode == 2


def test_check_with_liveness_beside_the_prover(tmp_path):
    # the graph is kept at --requests 2: liveness rows in the table (no z3 verdict: the prover
    # judges no liveness property), in JUnit and in JSON; at 3 the section says it was not judged
    junit = tmp_path / "j.xml"
    args = ("check", "--revision", "2026-07-28", "--transport", "http")
    p = cli(*args, "--requests", "2", "--junit-xml", str(junit))
    assert p.returncode == 0, p.stderr
    assert "liveness   requests_answered            holds      -" in p.stdout
    names = {c.get("name") for c in ET.parse(junit).getroot().iter("testcase")}
    assert {"liveness:settles", "liveness:no_deadlock", "liveness:requests_answered"} <= names
    q = cli(*args, "--requests", "2", "--json")
    assert q.returncode == 0, q.stderr
    run = json.loads(q.stdout)["runs"][0]
    assert {v["name"]: v["holds"] for v in run["liveness"]} == {
        "settles": True,
        "no_deadlock": True,
        "requests_answered": True,
    }
    r = cli(*args, "--no-prove", "--requests", "3")
    assert r.returncode == 0 and "not judged on these runs" in r.stdout


@pytest.mark.slow
def test_prove_fails_on_unguarded_with_cti_and_trace(tmp_path):
    junit = tmp_path / "p.xml"
    p = cli(
        "prove",
        *UNGUARDED_HTTP,
        "--json",
        "--junit-xml",
        str(junit),
    )
    assert p.returncode == 1
    run = json.loads(p.stdout)["runs"][0]
    inv = {v["name"]: v["proof"] for v in run["invariants"]}
    assert inv["unique_in_flight"]["method"] == "bmc"
    assert inv["unique_in_flight"]["proved"] is False
    assert inv["unique_in_flight"]["trace"][-1]["action"] == "admit"
    assert inv["unique_in_flight"]["cti"]["broken"] == "unique_in_flight"
    assert inv["quiescent_clean"]["proved"] is True
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures")) >= 5


def test_prove_solver_timeout_is_a_failure_said_plainly():
    p = cli("prove", "--revision", "2026-07-28", "--transport", "http", "--timeout", "0.001")
    assert p.returncode == 1
    assert "UNKNOWN" in p.stdout and "not a pass" in p.stdout
    assert "wall-clock timeout" in p.stdout


def test_prove_spent_budget_is_a_failure_said_plainly():
    """The budget counts z3's work, so running out of it does not depend on the machine's load."""
    p = cli("prove", "--revision", "2025-11-25", "--transport", "stdio", "--budget", "0.001")
    assert p.returncode == 1
    assert "UNKNOWN" in p.stdout and "resource units spent" in p.stdout
    assert cli("prove", "--budget", "0").returncode == 2


def test_prove_usage():
    p = cli("prove", "--help")
    assert p.returncode == 0
    assert "--depth" in p.stdout and "counterexample to induction" in p.stdout
    assert cli("prove", "--depth", "0").returncode == 2
    assert cli("prove", "--design", "nope").returncode == 2


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc (Linux)")
@pytest.mark.parametrize(
    "sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"]
)
def test_check_stopped_by_a_signal_takes_its_workers_with_it(sig, code):
    """A CI timeout sends SIGTERM: check exits, and none of its worker processes goes on
    exploring as an orphan."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "check", "--design", "all", "--no-prove", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # a shell's background job inherits SIGINT ignored, and Python then keeps it ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            workers = descendants(proc.pid)
            time.sleep(0.05)
        assert proc.poll() is None and len(workers) >= 2, "the runs are spread over workers"
        time.sleep(0.5)
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
        err = proc.stderr.read().decode(errors="replace")
        assert rc == code, err[-3000:]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in workers):
            time.sleep(0.05)
        left = {p: _command(p) for p in workers if alive(p)}
        assert left == {}, f"no worker outlives check: {left}"
        assert "Traceback" not in err, err[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in descendants(proc.pid):
            os.kill(p, signal.SIGKILL)


@pytest.mark.parametrize(
    "argv, what",
    [
        (["check", "--no-prove", "--junit-xml", "{f}/x.xml"], "--junit-xml"),
        (["prove", "--junit-xml", "{f}/x.xml"], "--junit-xml"),
        (["diagrams", "--out", "{f}/sub"], "--out"),
    ],
)
def test_an_unwritable_output_path_fails_before_the_run(tmp_path, capsys, argv, what):
    """A file where a directory should be: exit 2 at once with the reason, no traceback, and no
    run (the explorer is never called)."""
    from mcp_inflight.draw import output as draw_output
    from mcp_inflight.proofs import explorer as explore_mod
    from mcp_inflight.proofs import prove as prove_mod

    f = tmp_path / "a-file"
    f.write_text("")
    called = []
    mp = pytest.MonkeyPatch()
    mp.setattr(explore_mod, "search_session", lambda *a, **k: called.append(a))
    mp.setattr(explore_mod, "explore", lambda *a, **k: called.append(a))
    mp.setattr(prove_mod, "prove", lambda *a, **k: called.append(a))
    mp.setattr(draw_output, "_contents", lambda *a, **k: called.append(a))
    try:
        rc = main([a.format(f=f) for a in argv])
    finally:
        mp.undo()
    err = capsys.readouterr().err
    assert rc == 2 and called == []
    assert what in err and "Not a directory" in err
