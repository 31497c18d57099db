"""The models page in a real browser: Chromium (the Debian package) driven by Playwright.

Skipped, saying which is missing, without Playwright or ``/usr/bin/chromium`` (as
``tests/test_web_browser.py``).  What the page shows is checked against the one checker: the
trace it walks is the explorer's, and the state and properties at each step are those the
model gives.
"""

from __future__ import annotations

import pytest

from mcp_inflight.model import subscriptions
from mcp_inflight.proofs.declared import explore
from support.browser import SKIPS

try:
    from playwright.sync_api import expect
except ImportError:
    expect = None

pytestmark = SKIPS

from test_web import start_server, stop_server  # noqa: E402  (after the skips)


@pytest.fixture(scope="module")
def server():
    # the session page (linked) at small bounds: its exploration behind the list is quick
    proc, url = start_server("--model", "subscriptions", "--ids", "1", "--requests", "2")
    yield url
    stop_server(proc)


def _status(page, prop: str) -> str:
    return page.locator(f'#properties tr[data-property="{prop}"]').get_attribute("data-status")


def test_walk_a_mutants_counterexample_and_reopen_its_link(server, page):
    res = explore(subscriptions.spec("by-listen-id"))
    want = res.traces["notification_reaches_subscriber"]
    n = len(want)
    page.goto(server + "models?model=subscriptions&design=by-listen-id")
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    link = page.locator(
        '#verdict-list a[data-trace="notification_reaches_subscriber"][data-what="counterexample"]'
    )
    link.click()
    expect(page.locator("#position")).to_have_text(f"step 0 of {n}")
    expect(page.locator("#following")).to_contain_text("notification_reaches_subscriber")
    page.locator("#forward").click()
    expect(page.locator("#position")).to_have_text(f"step 1 of {n}")
    for k in range(2, n + 1):
        page.keyboard.press("ArrowRight")
        expect(page.locator("#position")).to_have_text(f"step {k} of {n}")
    # the explorer's trace, step by step, and the break at its end
    stories = page.locator("#path li[data-step] .text").all_inner_texts()[1:]
    assert stories == [s["story"] for s in want]
    expect(page.locator("#story")).to_have_class("bad")
    assert _status(page, "notification_reaches_subscriber") == "fails"
    assert "bad" in page.locator(f'#path li[data-step="{n}"]').get_attribute("class")
    # one step back, the step property has not been broken yet
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#position")).to_have_text(f"step {n - 1} of {n}")
    assert _status(page, "notification_reaches_subscriber") == "holds"
    url = page.locator("#link").input_value()
    assert f"at={n - 1}" in url and "path=" in url
    other = page.context.new_page()
    try:
        other.goto(url)
        expect(other.locator("#position")).to_have_text(f"step {n - 1} of {n}")
        assert other.locator("#model").input_value() == "subscriptions"
        assert other.locator("#design").input_value() == "by-listen-id"
    finally:
        other.close()


def test_a_liveness_failure_opens_as_its_lasso(server, page):
    """The tasks mutant without a ttl: its liveness failure is listed with the steps that
    repeat forever, and opens as the trace followed by the loop once round, whose last step
    leaves the goal still not reached."""
    from mcp_inflight.model import tasks

    res = explore(tasks.spec("unbounded-ttl", requests=1))
    trace, loop = res.traces["tasks_end"], res.loops["tasks_end"]
    n = len(trace) + len(loop)
    page.goto(server + "models?model=tasks&design=unbounded-ttl&requests=1")
    link = page.locator('#verdict-list a[data-trace="tasks_end"][data-what="counterexample"]')
    expect(link).to_contain_text(f"({n} steps, steps {len(trace) + 1}-{n} repeat forever)")
    link.click()
    expect(page.locator("#position")).to_have_text(f"step 0 of {n}")
    page.locator("#last").click()
    expect(page.locator("#position")).to_have_text(f"step {n} of {n}")
    stories = page.locator("#path li[data-step] .text").all_inner_texts()[1:]
    assert stories == [s["story"] for s in trace + loop]
    assert _status(page, "tasks_end") == "goal not yet"


def test_step_from_the_initial_state_with_ghosts_marked(server, page):
    page.goto(server + "models")
    # the server was started with --model subscriptions: the page opens on it
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    assert page.locator("#model").input_value() == "subscriptions"
    sp = subscriptions.spec("graceful-response")
    ghosts = sorted(v.name for v in sp.vars if v.ghost)
    assert (
        sorted(page.locator("#state tr.ghost").evaluate_all("rs => rs.map(r => r.dataset.var)"))
        == ghosts
    )
    assert page.locator("#state tr:not(.ghost) .ghost-tag").count() == 0
    first = page.locator("#enabled button").first
    tok = first.get_attribute("data-token")
    page.locator("body").press("1")
    expect(page.locator("#position")).to_have_text("step 1 of 1")
    assert page.locator('#path li[data-step="1"]').count() == 1
    assert page.locator("#state td.changed").count() > 0
    assert tok in page.url
    # then by click: the second move
    page.locator("#enabled button").nth(1).click()
    expect(page.locator("#position")).to_have_text("step 2 of 2")
    page.keyboard.press("Home")
    expect(page.locator("#position")).to_have_text("step 0 of 2")
    expect(page.locator("#state td.changed")).to_have_count(0)


def test_switch_model_and_design_and_screenshot(server, page, tmp_path):
    page.goto(server + "models")
    expect(page.locator("#position")).to_have_text("step 0 of 0")
    page.select_option("#model", "lease")
    expect(page.locator("#design-doc")).to_contain_text("lease fenced")
    assert page.locator("#design option").first.inner_text() == "fenced (safe)"
    assert page.locator("#bound-failover").count() == 1  # the hazard's bound
    expect(page.locator("#design-doc")).not_to_contain_text("Hazard failover")
    page.locator("#bound-failover").check()
    expect(page.locator("#design-doc")).to_contain_text("Hazard failover enabled")
    assert "failover=1" in page.url
    page.locator("#bound-failover").uncheck()
    expect(page.locator("#design-doc")).not_to_contain_text("Hazard failover")
    expect(page.locator("#explore-status")).to_contain_text("every property holds", timeout=60_000)
    page.select_option("#design", "unfenced")
    expect(page.locator('#verdict-list a[data-trace="single_writer"]')).to_have_count(
        1, timeout=60_000
    )
    expect(page.locator('#properties tr[data-property="single_writer"] td').nth(3)).to_have_text(
        "fails"
    )
    shot = tmp_path / "models.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_a_link_that_does_not_replay_says_why(server, page):
    page.goto(server + "models?model=rounds&path=fly.0")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("step 1: 'fly.0' is no move of rounds")


def test_the_session_page_links_to_the_models_page(server, page):
    page.goto(server)
    page.locator('a[href="/models"]').click()
    expect(page.locator("h1")).to_contain_text("declared models")
    expect(page.locator("#position")).to_have_text("step 0 of 0")
