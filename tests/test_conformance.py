"""The official MCP conformance suite against our servers (slow), and the judging it relies on (quick).

The slow tests run ``tests/conformance/run.py`` per server: the pinned suite, both revisions, and
the comparison with ``tests/conformance/expected-failures/``. They fail on an unexpected failure
or on a stale expected-failure line, and are skipped, with the reason, when npm cannot install
the pinned packages or when the server under test is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.conformance_run import RUN, load_run
from support.sessions import INITIALIZED, initialize

HERE = Path(__file__).resolve().parent


run = load_run("conformance_run")


# --- quick: the judging ----------------------------------------------------------------------


def _write_checks(out: Path, scenario: str, statuses: list[str], stamp="2026-12-03T09-20-31-120Z"):
    folder = out / f"server-{scenario}-{stamp}"
    folder.mkdir(parents=True)
    checks = [
        {"id": f"{scenario}-{i}", "status": s, "errorMessage": None if s != "FAILURE" else "boom"}
        for i, s in enumerate(statuses)
    ]
    (folder / "checks.json").write_text(json.dumps(checks))


def test_read_checks_names_scenarios_and_judges_each(tmp_path):
    # A timestamp with "-20" in its time part must not cut the scenario name.
    _write_checks(tmp_path, "prompts-get-with-image", ["SUCCESS", "SUCCESS"])
    _write_checks(tmp_path, "tools-call-error", ["SUCCESS", "FAILURE"])
    _write_checks(tmp_path, "tools-list", ["SUCCESS", "WARNING"])
    got = run.read_checks(tmp_path)
    assert set(got) == {"prompts-get-with-image", "tools-call-error", "tools-list"}
    assert got["prompts-get-with-image"]["passed"]
    assert not got["tools-call-error"]["passed"] and got["tools-call-error"]["failed"] == [
        "tools-call-error-1"
    ]
    assert got["tools-list"]["passed"], "a WARNING does not fail a scenario (the suite's own rule)"


def _verdict(
    tmp_path,
    monkeypatch,
    scenarios: dict[str, bool],
    expected: str,
    needed: list[str],
    suite_exit: int | None = None,
):
    exp = tmp_path / "expected"
    exp.mkdir(exist_ok=True)
    (exp / "srv-2025-11-25.txt").write_text(expected)
    monkeypatch.setattr(run, "EXPECTED", exp)
    if suite_exit is None:  # what the suite itself says: 0 when every required scenario passed
        suite_exit = 0 if all(scenarios.get(n, False) for n in needed) else 1
    data = {
        "server": "srv",
        "revision": "2025-11-25",
        "suite_exit": suite_exit,
        "scenarios": {k: {"passed": v, "messages": []} for k, v in scenarios.items()},
    }
    return run.judge(data, needed)


def test_judge_all_pass(tmp_path, monkeypatch):
    v = _verdict(tmp_path, monkeypatch, {"a": True, "b": True}, "", ["a", "b"])
    assert (v["passed"], v["required"], v["unexpected"], v["stale"]) == (2, 2, [], [])


def test_judge_unexpected_failure(tmp_path, monkeypatch):
    v = _verdict(tmp_path, monkeypatch, {"a": True, "b": False}, "", ["a", "b"])
    assert v["unexpected"] == ["b"] and v["passed"] == 1


def test_judge_expected_failure_is_not_unexpected(tmp_path, monkeypatch):
    v = _verdict(
        tmp_path, monkeypatch, {"a": True, "b": False}, "b  # not supported yet\n", ["a", "b"]
    )
    assert (
        v["unexpected"] == [] and v["stale"] == [] and v["expected"] == {"b": "not supported yet"}
    )


def test_judge_flags_a_disagreement_with_the_suites_exit_code(tmp_path, monkeypatch):
    assert _verdict(tmp_path, monkeypatch, {"a": True}, "", ["a"])["agrees"]
    assert not _verdict(tmp_path, monkeypatch, {"a": True}, "", ["a"], suite_exit=1)["agrees"]
    assert not _verdict(tmp_path, monkeypatch, {"a": False}, "a  # known\n", ["a"], suite_exit=0)[
        "agrees"
    ]


def test_judge_stale_line_when_the_scenario_passes(tmp_path, monkeypatch):
    v = _verdict(
        tmp_path, monkeypatch, {"a": True, "b": True}, "b  # not supported yet\n", ["a", "b"]
    )
    assert v["stale"] == ["b"]


def test_judge_stale_line_for_a_scenario_not_required(tmp_path, monkeypatch):
    v = _verdict(tmp_path, monkeypatch, {"a": True}, "zzz  # gone\n", ["a"])
    assert v["stale"] == ["zzz"]


def test_judge_missing_scenario_counts_as_failure(tmp_path, monkeypatch):
    v = _verdict(tmp_path, monkeypatch, {"a": True}, "", ["a", "b"])
    assert v["missing"] == ["b"] and v["unexpected"] == ["b"]


def test_expected_failure_needs_a_reason(tmp_path, monkeypatch):
    exp = tmp_path / "expected"
    exp.mkdir()
    (exp / "srv-2025-11-25.txt").write_text("b\n")
    monkeypatch.setattr(run, "EXPECTED", exp)
    with pytest.raises(run.Trouble, match="reason"):
        run.expected_failures("srv", "2025-11-25")


def test_every_expected_failure_file_names_a_known_server_and_revision():
    for f in (HERE / "conformance" / "expected-failures").glob("*.txt"):
        server, rev = f.stem[: -len("-2025-11-25")], f.stem[-len("2025-11-25") :]
        assert server in run.SERVERS and rev in run.REVISIONS, f.name
        run.expected_failures(server, rev)  # parses, every line has a reason


def test_help_names_servers_and_revisions():
    r = subprocess.run([sys.executable, str(RUN), "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for word in list(run.SERVERS) + list(run.REVISIONS) + ["expected-failures"]:
        assert word in r.stdout


def test_unknown_server_is_a_usage_error():
    r = subprocess.run(
        [sys.executable, str(RUN), "--server", "nope"], capture_output=True, text=True
    )
    assert r.returncode == 2 and "unknown server" in r.stderr


# --- slow: the suite itself ---------------------------------------------------------------------

NEEDS = {"mcp-inflight": "mcp_inflight.serve", "sdk": "mcp", "sdk-guard": "mcp_inflight.guard"}


@pytest.fixture(scope="module")
def suite_installed():
    try:
        run.install(force=False)
    except run.Trouble as e:
        pytest.skip(f"the pinned conformance suite cannot be installed here: {e}")


@pytest.mark.slow
@pytest.mark.parametrize("server", list(run.SERVERS))
def test_conformance_suite(server, suite_installed, tmp_path):
    if importlib.util.find_spec(NEEDS[server]) is None:
        pytest.skip(f"{NEEDS[server]} is not installed, so the {server} server cannot run")
    # Behind the guard the SDK must pass exactly what it passes bare: run both, compare.
    servers = ["sdk", "sdk-guard"] if server == "sdk-guard" else [server]
    argv = [a for s in servers for a in ("--server", s)]
    r = subprocess.run(
        [sys.executable, str(RUN), *argv, "--results", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, (
        f"conformance run failed for {server}:\n{r.stdout}\n{r.stderr[-4000:]}"
    )
    summary = json.loads(r.stdout)
    assert summary["ok"]
    assert summary["guard_differences"] == []
    assert {(x["server"], x["revision"]) for x in summary["runs"]} == {
        (s, rev) for s in servers for rev in run.REVISIONS
    }
    for x in summary["runs"]:
        assert x["required"] > 0 and not x["unexpected"] and not x["stale"] and x["agrees"]


# --- slow: the guard really sits in front of the SDK fixture the suite passed -------------------


def _start_fixture(guard: bool):
    port = run.free_port()
    argv = [sys.executable, str(HERE / "conformance" / "sdk_fixture.py"), "--port", str(port)]
    proc = subprocess.Popen(
        argv + (["--guard"] if guard else []), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("the SDK fixture did not start")


def _duplicate_statuses(url: str) -> list[int | None]:
    """Two concurrent tools/call POSTs under one id in one session: their HTTP statuses once each
    body has been read to the end (None: no complete answer within 5 s)."""
    import asyncio

    import httpx

    head = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            r = await c.post(
                url,
                headers=head,
                json=initialize(),
            )
            sid = r.headers["mcp-session-id"]
            h = {**head, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
            await c.post(url, headers=h, json=INITIALIZED)
            call = {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {
                    "name": "test_tool_with_progress",
                    "arguments": {},
                    "_meta": {"progressToken": "p"},
                },
            }

            async def post():
                try:
                    r = await asyncio.wait_for(c.post(url, headers=h, json=call), 5)
                    return r.status_code
                except (TimeoutError, httpx.TimeoutException):
                    return None

            first = asyncio.create_task(post())
            await asyncio.sleep(0.03)  # the first is in flight (its tool runs 100 ms)
            second = await post()
            return [await first, second]

    return asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("guarded", [False, True], ids=["bare", "guard"])
def test_sdk_fixture_duplicate_in_flight_id(guarded):
    if guarded and importlib.util.find_spec("mcp_inflight.guard") is None:
        pytest.skip("mcp_inflight.guard is not installed")
    proc, url = _start_fixture(guarded)
    try:
        statuses = _duplicate_statuses(url)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    if guarded:
        assert statuses == [200, 409], "behind the guard the duplicate is refused, the first served"
    else:
        # The bare SDK takes the duplicate in (the defect the guard removes); the first POST then
        # waits for a response that went to the second (measured: no answer at all).
        assert statuses[1] == 200 and statuses != [200, 409], statuses


def test_guard_differences_compare_bare_and_guarded_per_revision():
    def v(server, rev, failed):
        return {"server": server, "revision": rev, "failed": failed}

    same = [v("sdk", "2025-11-25", ["x"]), v("sdk-guard", "2025-11-25", ["x"])]
    assert run.guard_differences(same) == []
    worse = [v("sdk", "2025-11-25", []), v("sdk-guard", "2025-11-25", ["tools-list"])]
    assert run.guard_differences(worse) == [
        "2025-11-25 tools-list: passes bare, fails behind the guard"
    ]
    better = [v("sdk", "2026-07-28", ["caching"]), v("sdk-guard", "2026-07-28", [])]
    assert run.guard_differences(better) == [
        "2026-07-28 caching: fails bare, passes behind the guard"
    ]
    assert run.guard_differences([v("sdk", "2025-11-25", ["x"])]) == [], "only where both ran"


# --- quick: the fixture contract's own pieces ---------------------------------------------------


def test_request_state_round_trips_and_refuses_tampering():
    from mcp_inflight.fixtures import contract

    token = contract.seal_state({"tool": "t", "round": 1})
    assert contract.open_state(token) == {"round": 1, "tool": "t"}
    body, tag = token.rsplit(".", 1)
    forged = contract.seal_state({"tool": "t", "round": 2}).rsplit(".", 1)[0] + "." + tag
    for bad in (forged, body + "." + "0" * len(tag), "junk", None, 7):
        with pytest.raises(contract.ContractError) as e:
            contract.open_state(bad)
        assert e.value.code == -32602


def test_contract_media_are_well_formed():
    import base64
    import struct
    import zlib

    from mcp_inflight.fixtures import contract

    png = base64.b64decode(contract.PNG_B64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", png[8:16])
    assert kind == b"IHDR" and struct.unpack(">II", png[16:24]) == (1, 1)
    assert struct.unpack(">I", png[16 + length : 20 + length])[0] == zlib.crc32(
        png[12 : 16 + length]
    )
    wav = base64.b64decode(contract.WAV_B64)
    assert (
        wav[:4] == b"RIFF"
        and wav[8:12] == b"WAVE"
        and struct.unpack("<I", wav[4:8])[0] == len(wav) - 8
    )


def test_contract_tool_names_are_unique_and_spec_shaped():
    import re

    from mcp_inflight.fixtures import contract

    names = [t["name"] for t in contract.TOOLS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", n) for n in names)


def test_missing_capability_is_refused_only_when_known():
    import asyncio

    from mcp_inflight.fixtures import contract

    class P:
        protocol_version = "2026-07-28"

        def __init__(self, caps):
            self.client_capabilities = caps

    call = {"name": "test_missing_capability", "arguments": {}}
    with pytest.raises(contract.ContractError) as e:
        asyncio.run(contract.call_tool(P({}), call))
    assert e.value.code == -32021 and e.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert asyncio.run(contract.call_tool(P({"sampling": {}}), call))["content"]
