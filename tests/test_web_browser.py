"""The explorer page in a real browser: Chromium (the Debian package) driven by Playwright.

Needs ``apt-get install chromium`` (``/usr/bin/chromium``) and ``pip install playwright``; the
test is skipped, saying which is missing, when either is absent.  Playwright's own browser
download is not used: the system Chromium is launched by path.
"""

from __future__ import annotations

import os
import re

import pytest

from support.browser import SKIPS

try:
    from playwright.sync_api import expect
except ImportError:
    expect = None

pytestmark = SKIPS

from test_web import DEFAULTS, start_server, stop_server  # noqa: E402  (after the skips)


@pytest.fixture(scope="module")
def server():
    proc, url = start_server(*DEFAULTS)
    yield url
    stop_server(proc)


def _position(page) -> str:
    return page.locator("#position").inner_text()


def _status(page, prop: str) -> str:
    return page.locator(f'#properties tr[data-property="{prop}"]').get_attribute("data-status")


def test_walk_a_counterexample_and_reopen_it_from_its_link(server, page):
    page.goto(server)
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    trace = page.locator(
        '#trace-list a[data-trace="no_misrouted_notification"][data-what="counterexample"]'
    )
    trace.click()
    expect(page.locator("#position")).to_have_text("step 0 of 7")
    expect(page.locator("#following")).to_contain_text("no_misrouted_notification")
    # step through it: the forward button, then the keyboard
    page.locator("#forward").click()
    expect(page.locator("#position")).to_have_text("step 1 of 7")
    for n in range(2, 8):
        page.keyboard.press("ArrowRight")
        expect(page.locator("#position")).to_have_text(f"step {n} of 7")
    # the red step: the story, the path entry and the diagram's arrow
    expect(page.locator("#story")).to_have_class("bad")
    expect(page.locator("#story")).to_contain_text("misrouted")
    row = page.locator('#diagram g.row[data-step="7"]')
    assert row.get_attribute("data-marked") == "MISROUTED"
    assert "bad" in row.get_attribute("class")
    assert row.locator("line").get_attribute("stroke") == "#c62828"
    assert page.locator('#diagram g.row[data-marked="MISROUTED"]').count() == 1
    assert _status(page, "no_misrouted_notification") == "fails"
    # jump along the path: click a step of the diagram, then of the path list
    page.locator('#diagram g.row[data-step="3"]').click()
    expect(page.locator("#position")).to_have_text("step 3 of 7")
    page.locator('#path li[data-step="5"]').click()
    expect(page.locator("#position")).to_have_text("step 5 of 7")
    story = page.locator("#story").inner_text()
    assert story.startswith("5. server admits A")
    page.locator("#copy").click()
    link = page.locator("#link").input_value()
    assert "path=" in link and "at=5" in link
    # a fresh load of the copied link lands on the same step of the same path
    other = page.context.new_page()
    try:
        other.goto(link)
        expect(other.locator("#position")).to_have_text("step 5 of 7")
        assert other.locator("#story").inner_text() == story
        assert other.locator('#diagram g.row[data-marked="MISROUTED"]').count() == 1
        assert "current" in other.locator('#diagram g.row[data-step="5"]').get_attribute("class")
    finally:
        other.close()
    page.reload()
    expect(page.locator("#position")).to_have_text("step 5 of 7")
    assert page.locator("#story").inner_text() == story


def test_take_actions_by_keyboard_and_by_click(server, page):
    page.goto(server + "?path=client_sends.A.1-rogue_sends.B.1-arrive.A-arrive.B-admit.A-admit.B")
    expect(page.locator("#position")).to_have_text("step 6 of 6")
    assert _status(page, "no_misrouted_notification") == "holds"
    buttons = page.locator("#enabled button")
    tokens = [buttons.nth(k).get_attribute("data-token") for k in range(buttons.count())]
    # by keyboard: the digit of "A emits progress/log"
    key = tokens.index("emit.A") + 1
    assert key <= 9
    page.locator("body").press(str(key))
    expect(page.locator("#position")).to_have_text("step 7 of 7")
    expect(
        page.locator('#properties tr[data-property="no_misrouted_notification"]')
    ).to_have_attribute("data-status", "fails")
    expect(page.locator('#properties tr[data-property="no_misrouted_notification"]')).to_have_class(
        re.compile(r"\bchanged\b")
    )
    assert page.url.endswith("admit.B-emit.A&at=7")
    # back by keyboard, then down the list and Enter
    page.keyboard.press("Backspace")
    expect(page.locator("#position")).to_have_text("step 6 of 7")
    assert _status(page, "no_misrouted_notification") == "holds"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#position")).to_have_text(re.compile(r"step 7 of 7"))
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#position")).to_have_text("step 6 of 7")  # the page has stepped back
    # by click: A's response, written through the slot under id 1, which is B's (owned_removal,
    # a step property, already fails on step 6: B's admit overwrote A's stream slot)
    expect(page.locator('#properties tr[data-property="no_misrouted_response"]')).to_have_attribute(
        "data-status", "holds"
    )
    page.locator('#enabled button[data-token="respond.A"]').click()
    expect(page.locator("#position")).to_have_text("step 7 of 7")
    assert page.url.endswith("admit.B-respond.A&at=7")
    for prop in ("no_misrouted_response", "owned_removal"):
        expect(page.locator(f'#properties tr[data-property="{prop}"]')).to_have_attribute(
            "data-status", "fails"
        )
    expect(page.locator('#lifecycle tr[data-instance="A"] td.life')).to_have_text("responded")
    expect(page.locator('#diagram g.row[data-step="7"]')).to_have_attribute(
        "data-marked", "MISROUTED"
    )
    changed = page.locator("#state td.changed")
    assert changed.count() >= 3


def test_switch_configuration_and_screenshot(server, page, tmp_path):
    page.goto(server)
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    page.select_option("#design", "atomic")
    expect(page).to_have_url(re.compile(r"design=atomic"))
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    expect(page.locator("#explore-status")).to_contain_text("states explored")
    expect(page.locator("#trace-list a").first).to_be_visible()
    # atomic keeps every invariant: only witnesses (and hazards, none on this profile) listed
    whats = page.locator("#trace-list a").evaluate_all("as => as.map(a => a.dataset.what)")
    assert whats and set(whats) == {"witness"}
    out = os.environ.get("MCP_INFLIGHT_SCREENSHOT")
    page.screenshot(path=out or str(tmp_path / "explore.png"), full_page=True)


def test_a_link_that_does_not_replay_says_why(server, page):
    page.goto(server + "?path=client_sends.A.1-admit.A")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("step 2: admit.A is not enabled")
    page.locator("#error a").click()
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    expect(page.locator("#error")).to_be_hidden()


@pytest.fixture(scope="module")
def recorded_server(tmp_path_factory):
    """A server listing (``--trace``) a trace recorded by ``mcp-inflight record``'s proxy in front
    of the bare official SDK while a second request reused an in-flight id."""
    from test_trace_record import record

    from support.servers import sdk_server, stop

    path = tmp_path_factory.mktemp("traces") / "bare-sdk.jsonl"
    proc, url = sdk_server()
    try:
        record(url, path)
    finally:
        stop(proc)
    server, base = start_server(*DEFAULTS, "--trace", str(path))
    yield base
    stop_server(server)


@pytest.mark.slow
@pytest.mark.oracle_expects_violation  # the bare SDK's misrouting, which the page shows
def test_a_trace_recorded_in_front_of_the_bare_sdk(recorded_server, page):
    page.goto(recorded_server)
    entry = page.locator('#recorded-list li.recorded:has-text("bare-sdk.jsonl")')
    expect(entry).to_contain_text("checked on atomic: not explained")
    # the bare SDK's trace is a run of unguarded: open it, walk to the end, see the red step
    entry.locator('a[data-design="unguarded"]').click()
    expect(page.locator("#following")).to_contain_text("breaks unique_in_flight at step")
    expect(page).to_have_url(re.compile(r"design=unguarded&revision=2025-11-25"))
    total = int(re.search(r"of (\d+)", _position(page)).group(1))
    step = int(re.search(r"at step (\d+)", page.locator("#following").inner_text()).group(1))
    assert _status(page, "unique_in_flight") == "holds"
    page.keyboard.press("End")
    expect(page.locator("#position")).to_have_text(f"step {total} of {total}")
    bad = page.locator(f'#path li[data-step="{step}"]')
    expect(bad).to_have_class(re.compile(r"\bbad\b"))
    expect(bad.locator(".warn")).to_contain_text("unique_in_flight")
    assert "bad" in page.locator(f'#diagram g.row[data-step="{step}"]').get_attribute("class")
    assert page.locator("#path .tag.inferred").count() >= 1  # the admits the wire did not show
    page.locator(f'#path li[data-step="{step}"]').click()
    expect(page.locator("#position")).to_have_text(f"step {step} of {total}")
    expect(page.locator('#properties tr[data-property="unique_in_flight"]')).to_have_attribute(
        "data-status", "fails"
    )
    # the link reopens the same step of the same run, still following the recorded trace
    link = page.locator("#link").input_value()
    other = page.context.new_page()
    try:
        other.goto(link)
        expect(other.locator("#position")).to_have_text(f"step {step} of {total}")
        expect(other.locator("#following")).to_contain_text("bare-sdk.jsonl")
    finally:
        other.close()


def test_open_a_trace_file_from_the_page(server, page, tmp_path):
    """A trace file sent from the page (a model run turned into wire events, as a recorder
    writes them): one atomic cannot explain opens on unguarded at its red step's path, a clean
    one on atomic, an unreadable one says why."""
    from test_web import DUPLICATE_ADMITTED, model_run, wire

    from mcp_inflight.model import DESIGNS

    page.goto(server)
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(wire(model_run(DESIGNS["unguarded"], DUPLICATE_ADMITTED)))
    page.set_input_files("#trace-file", str(dup))
    expect(page.locator("#recorded-status")).to_have_text("opened dup.jsonl")
    expect(page.locator("#following")).to_contain_text("breaks unique_in_flight at step")
    expect(page).to_have_url(re.compile(r"design=unguarded&revision=2025-11-25"))
    expect(page.locator('#recorded-list a[data-recorded="dup.jsonl"]').first).to_be_visible()
    page.keyboard.press("End")
    expect(page.locator("#path li.bad .warn").first).to_contain_text("unique_in_flight")
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(wire(model_run(DESIGNS["atomic"], DUPLICATE_ADMITTED[:3])))
    page.set_input_files("#trace-file", str(clean))
    expect(page.locator("#recorded-status")).to_have_text("opened clean.jsonl")
    expect(page.locator("#following")).to_contain_text("clean: every step is a move")
    expect(page).to_have_url(re.compile(r"design=atomic"))
    expect(page.locator('#recorded-list a[data-recorded="clean.jsonl"]')).to_have_class(
        re.compile(r"\bcurrent\b")
    )
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text('{"t": 1}\n')
    page.set_input_files("#trace-file", str(bad_file))
    expect(page.locator("#recorded-status")).to_contain_text("line 1: missing key")
