import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.fixture(scope="module")
def sdk_bare():
    """The official SDK's server without the guard, on a loopback port: its URL."""
    from support.servers import sdk_server, stop

    proc, url = sdk_server()
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def sdk_guarded():
    """The official SDK's server behind ``mcp_inflight.guard``, on a loopback port: its URL."""
    from support.servers import sdk_server, stop

    proc, url = sdk_server("--guard")
    yield url
    stop(proc)
