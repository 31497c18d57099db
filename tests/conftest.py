import os
import sys

import pytest
from hypothesis import HealthCheck, settings

# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set: a run starts many
# Python processes (xdist workers, the command line, servers, nested pytest runs) importing the
# same modules, and without caches each compiles them again and pytest rewrites the asserts of
# every test module and of the plugin's package anew (about 6 s of CPU a pytest process). The
# worker processes and every subprocess inherit the environment as it is here.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.fixture(scope="session")
def sdk_bare():
    """The official SDK's server without the guard, on a loopback port: its URL (one per test
    process; every test opens sessions of its own)."""
    from support.servers import sdk_server, stop

    proc, url = sdk_server()
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def sdk_guarded():
    """The official SDK's server behind ``mcp_inflight.guard``, on a loopback port: its URL."""
    from support.servers import sdk_server, stop

    proc, url = sdk_server("--guard")
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def redis():
    """A real ``redis-server`` of this test module's own, on a loopback port (skips the test
    where redis-server is not installed); killed and its directory removed after the module."""
    from support.redis_workers import REDIS_SERVER, Redis

    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed")
    r = Redis()
    yield r
    r.close()


@pytest.fixture(scope="session")
def run_tmp(tmp_path_factory):
    """A directory of this test run, shared by its worker processes (each xdist worker has a
    base directory of its own under the run's)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture
def fresh_tables():
    """The session model's cached action tables, cleared around a test that patches them."""
    from mcp_inflight.model import session, step

    session.actions_for.cache_clear()
    step.moves.cache_clear()
    yield
    session.actions_for.cache_clear()
    step.moves.cache_clear()


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "oracle_expects_violation: the test's server is broken on purpose; the oracle "
        "(tests/support/oracle.py) must find its trace unexplained by the model",
    )
    config.addinivalue_line(
        "markers",
        "oracle_out_of_scope(reason): the test's trace is outside what the session model "
        "explains (the reason says why, and which check judges it instead); not judged",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """After each test's call: the wire traces of the servers it used, checked by the model
    (tests/support/oracle.py); an unexplained trace fails the test."""
    outcome = yield
    from support import oracle

    bad = oracle.check_all()
    if item.get_closest_marker("oracle_out_of_scope") is not None:
        return
    if item.get_closest_marker("oracle_expects_violation") is not None:
        if not bad and outcome.excinfo is None:
            outcome.force_exception(
                oracle.OracleViolation("the oracle did not see the violation this test expects")
            )
        return
    if bad and outcome.excinfo is None:
        outcome.force_exception(
            oracle.OracleViolation("the model does not explain the trace:\n" + "\n".join(bad))
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    """After a test's teardown: what the servers its fixtures stopped wrote last."""
    outcome = yield
    from support import oracle

    bad = oracle.check_all()
    if item.get_closest_marker("oracle_out_of_scope") is not None:
        return
    if bad and outcome.excinfo is None:
        outcome.force_exception(
            oracle.OracleViolation("the model does not explain the trace:\n" + "\n".join(bad))
        )


# --- the pages in Chromium (tests/test_web_browser.py, tests/test_web_models_browser.py) --------


@pytest.fixture(scope="module")
def browser_context():
    """One Chromium context per test module (``support/browser.py``; the modules skip first when
    Playwright or Chromium is missing)."""
    from support.browser import chromium

    with chromium(viewport={"width": 1400, "height": 1000}) as ctx:
        yield ctx


@pytest.fixture
def page(browser_context):
    """A fresh page of that context; the test fails on an exception the page raised."""
    pg = browser_context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    pg.close()
    assert errors == []
