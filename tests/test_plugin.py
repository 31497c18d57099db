"""The pytest plugin (``mcp_probe``), used by test suites of their own through ``pytester``, each
run in a fresh pytest process that loads the plugin from the installed package's entry point.

The suite under test is the README's "Check your own server in CI" file, as printed there: with
the guard it passes (slow), without it (the one line changed) it fails with the defect classes
and their evidence lines.  Our own runtime's app passes (slow); an app without the slow tool fails
as "could not test"; other tests run as if the plugin were not there."""

from __future__ import annotations

import pathlib
import re

import pytest

pytest_plugins = ["pytester"]

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
GUARDED = "    return guard(server.streamable_http_app())"
BARE = "    return server.streamable_http_app()"


def readme_test_file() -> str:
    """The complete test file of the README's "Check your own server in CI" section."""
    text = README.read_text()
    section = text[text.index("## Check your own server in CI") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert GUARDED in code
    return code


PLAIN = """
import sys


def test_the_plugin_is_loaded_and_imports_nothing_of_the_probe(request):
    assert request.config.pluginmanager.has_plugin("mcp_inflight")
    assert "mcp_inflight.probe.plugin" in sys.modules
    probe = [m for m in sys.modules if m.startswith("mcp_inflight.probe.")]
    assert probe == ["mcp_inflight.probe.plugin"], probe


def test_other_tests_run_as_before():
    assert 1 + 1 == 2
"""

NO_SLOW_TOOL = """
import pytest

from mcp_inflight.impl.http import create_app
from mcp_inflight.impl.server import Server


def app_without_slow_tool():
    server = Server("no-slow-tool")

    @server.tool()
    async def echo(ctx, text: str) -> str:
        return text

    return create_app(server)


def test_no_slow_tool(mcp_probe):
    assert mcp_probe(app_without_slow_tool()).clean


@pytest.mark.mcp_probe("id_types", tool="nope")
def test_marker_options_are_defaults(mcp_probe):
    report = mcp_probe(app_without_slow_tool())
    assert "no tool 'nope'" in report.reason
    assert report.status == "untested"


@pytest.mark.mcp_probe("not_a_scenario")
def test_marker_scenarios_reach_the_probe(mcp_probe):
    mcp_probe(app_without_slow_tool())
"""


@pytest.mark.slow  # several seconds of real time; CI runs it with the slow tests
def test_bare_sdk_app_fails_with_the_classes_and_their_evidence(pytester):
    """A real in-process probe of the official SDK's app, two scenarios picked on the command
    line, beside tests that show the plugin leaves the rest alone."""
    pytester.makepyfile(
        test_aa_plain=PLAIN,
        test_inflight=readme_test_file().replace(GUARDED, BARE),
        test_no_slow_tool=NO_SLOW_TOOL,
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-rA",
        "--mcp-probe-scenario",
        "duplicate_progress",
        "--mcp-probe-scenario",
        "cancel_routing",
        timeout=180,
    )
    result.assert_outcomes(passed=3, failed=3)
    out = result.stdout.str()
    # the README's file without the guard: the classes, in the assertion line and the section
    result.stdout.fnmatch_lines(
        [
            "*where False = <Report DEFECTS: misrouted_notification, misrouted_response,"
            " lost_response, cancel_misdirected>.clean",
            "*- mcp-inflight probe -*",
            "*misrouted_notification     FOUND",
            "*- duplicate_progress: B's POST (id 11, token * carried * progress notification(s) "
            "for A's token*",
            "*misrouted_response         FOUND",
            "*- duplicate_progress: B's POST (id 11, sent at *) received at * a response with id 11"
            " that can only be A's*",
            "*cancel_misdirected         FOUND",
            "*- cancel_routing: B (id 31, never cancelled) stopped at *",
            "*DEFECTS FOUND: misrouted_notification, misrouted_response, lost_response, "
            "cancel_misdirected",
        ]
    )
    assert "response_routing " not in out and "reuse " not in out  # not picked: not run
    # an app without the slow tool: could not test, and the test fails
    result.stdout.fnmatch_lines(
        [
            "*<Report COULD NOT TEST: tool missing: the target has no tool 'slow'*",
            "*COULD NOT TEST: tool missing*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*def test_marker_scenarios_reach_the_probe*",
            "E * ValueError: unknown scenario(s) 'not_a_scenario'*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "PASSED test_aa_plain.py::test_the_plugin_is_loaded*",
            "PASSED test_aa_plain.py::test_other_tests_run_as_before",
            "PASSED test_no_slow_tool.py::test_marker_options_are_defaults",
        ]
    )


def test_plugin_can_be_turned_off(pytester):
    pytester.makepyfile(
        test_off="""
def test_off(request):
    assert not request.config.pluginmanager.has_plugin("mcp_inflight")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:mcp_inflight", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


OURS = """
from mcp_inflight.impl.http import create_app
from mcp_inflight.serve import demo_server


def test_our_app(mcp_probe):
    report = mcp_probe(create_app(demo_server()))
    assert report.clean
    assert report.doc["refusal"]["status"] == 409
"""

BARE_ALL = """
def test_bare_finds_every_class_but_reuse(mcp_probe):
    report = mcp_probe(build_app(), tool="slow", args={"label": "probe", "steps": 6, "delay": 0.25},
                       elicit_tool="ask", elicit_args={"label": "probe", "delay": 1.0})
    assert report.status == "defects"
    assert set(report.found) == {"misrouted_notification", "misrouted_server_request",
                                 "misrouted_response", "lost_response", "cancel_misdirected",
                                 "collateral_close", "id_type_confusion"}
"""


@pytest.mark.slow
def test_guarded_sdk_app_and_our_app_pass_and_the_bare_one_shows_every_class(pytester):
    """The README's file as printed (guarded), our runtime's app, and every scenario on the
    bare SDK app."""
    bare = readme_test_file().replace(GUARDED, BARE)
    bare = bare[: bare.index("def test_no_id_collisions")] + BARE_ALL
    pytester.makepyfile(test_inflight=readme_test_file(), test_ours=OURS, test_bare_all=bare)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", timeout=300)
    result.assert_outcomes(passed=3)
