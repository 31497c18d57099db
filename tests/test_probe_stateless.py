"""``mcp-inflight probe URL --revision 2026-07-28``: two clients' POSTs under one id, and the
close of a POST judged through the fixture contract (``probe_outcome``).

In-process: small servers with one known defect each (``tests/support/stateless_mutants.py``)
fail the scenario meant to catch it; a server without the contract is "could not test", never
clean.  Over real HTTP on loopback (slow): our runtime with the contract fixture, and the
official SDK's app with the contract, bare and behind the guard."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from mcp_inflight.impl.http import create_app
from mcp_inflight.probe import probe_app
from mcp_inflight.serve import demo_server

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE / "support"))

from stateless_mutants import App  # noqa: E402

BIN = pathlib.Path(sys.executable).parent
ARGS = {"label": "probe", "steps": 6, "delay": 0.25}
MODERN = "2026-07-28"


def _probe(app, *scenarios):
    return probe_app(app, revision=MODERN, args=ARGS, scenarios=list(scenarios) or None)


def test_a_shared_id_keyed_stream_map_misroutes_across_clients():
    r = _probe(App("overwrite"), "stateless_isolation")
    assert r.found == ["misrouted_notification", "misrouted_response", "lost_response"], r.text()


@pytest.mark.slow
def test_refusing_another_clients_id_is_a_defect_on_2026():
    r = _probe(App("refuse"), "stateless_isolation")
    assert r.found == ["refused_across_clients"], r.text()
    assert r.doc["refusal"]["status"] == 409


def test_a_close_that_does_not_cancel_is_found_by_the_contract():
    r = _probe(App("nocancel"), "stateless_close")
    assert r.found == ["close_not_cancelled"], r.text()
    assert any('"state": "completed"' in e for e in r.evidence["close_not_cancelled"])


@pytest.mark.slow
def test_the_sound_mutant_twin_is_clean():
    r = _probe(App("ok"), "stateless_close", "stateless_isolation")
    assert r.clean, r.text()


def test_without_the_contract_a_close_is_not_judged_never_clean():
    r = _probe(create_app(demo_server()), "stateless_close")
    assert r.status == "untested" and not r.clean, r.text()
    assert "probe_outcome" in r.not_judged["stateless_close"]


def test_unknown_revision_is_refused():
    with pytest.raises(ValueError):
        probe_app(create_app(demo_server()), revision="2099-01-01")


@pytest.mark.slow
def test_our_runtime_in_process_is_clean_on_every_stateless_scenario():
    from mcp_inflight.fixtures.probe_contract import build

    r = _probe(create_app(build()))
    assert r.clean, r.text()
    assert [s["scenario"] for s in r.doc["scenarios"]] == [
        "stateless_isolation",
        "stateless_close",
        "stateless_close_early",
        "stateless_reuse",
    ]


def _serve(argv, marker):
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ)
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if marker in line:
            return proc, line.split()[-1]
    proc.kill()
    raise RuntimeError(f"did not start: {argv}")


def _cli_probe(url):
    r = subprocess.run(
        [str(BIN / "mcp-inflight"), "probe", url, "--revision", MODERN, "--json", "--quiet"]
        + ["--args", json.dumps(ARGS)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return r.returncode, json.loads(r.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, marker",
    [
        (
            [str(BIN / "mcp-inflight"), "serve", "--fixtures", "probe_contract", "--port", "0"],
            "listening on",
        ),
        ([sys.executable, str(HERE / "support" / "sdk_contract_server.py")], "listening on"),
        (
            [sys.executable, str(HERE / "support" / "sdk_contract_server.py"), "--guard"],
            "listening on",
        ),
    ],
    ids=["ours", "sdk", "sdk-guarded"],
)
def test_real_servers_over_loopback_are_clean_on_2026(argv, marker):
    proc, url = _serve(argv, marker)
    try:
        code, doc = _cli_probe(url)
    finally:
        proc.terminate()
        proc.wait(10)
    assert code == 0 and doc["status"] == "clean", json.dumps(doc, indent=1)[:3000]
    assert doc["calibration"]["contract"] is True and doc["revision"] == MODERN
