"""The docs site in a real browser: built into a temporary folder, served on loopback, and every
page opened in Chromium (the Debian package, driven by Playwright, as tests/test_web_browser.py
does). A page fails on a console error or an uncaught exception, an image that did not load, a
request that failed or left loopback, or a Mermaid block that was not rendered into an SVG."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from support.browser import SKIPS, chromium

ROOT = Path(__file__).resolve().parent.parent
try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:
    PlaywrightTimeout = None

pytestmark = [
    # about 80 s on two shared cores: each of ~40 pages loads, and Mermaid renders
    pytest.mark.slow,
    *SKIPS,
]

#: Material renders each Mermaid block into a closed shadow root; this script, run before the
#: page's own, opens them so that the test can see the SVG inside.
OPEN_SHADOWS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (options) {
  return attach.call(this, Object.assign({}, options, {mode: "open"}));
};
"""

#: Run in the page once it has loaded: images that did not load, and Mermaid blocks with no SVG
#: or with Mermaid's error drawing (a block whose source does not parse).
INSPECT = """() => {
  const images = Array.from(document.images)
    .filter((i) => !i.complete || i.naturalWidth === 0)
    .map((i) => i.getAttribute("src"));
  const blocks = Array.from(document.querySelectorAll(".mermaid"));
  const unrendered = blocks
    .filter((b) => {
      const svg = (b.shadowRoot && b.shadowRoot.querySelector("svg")) || b.querySelector("svg");
      return !svg || svg.getAttribute("aria-roledescription") === "error";
    })
    .map((b) => b.textContent.slice(0, 60));
  return {images, mermaid: blocks.length, unrendered};
}"""


@pytest.fixture(scope="module")
def site():
    """The site, built strict into a temporary folder and served on 127.0.0.1."""
    folder = Path(tempfile.mkdtemp(prefix="mcp-inflight-site-"))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-d", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    handler = functools.partial(QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


@pytest.fixture(scope="module")
def browser():
    with chromium() as ctx:
        ctx.add_init_script(OPEN_SHADOWS)
        yield ctx


def pages(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("index.html"))


def problems(browser, base: str, path: str, mermaid_ms: int = 30_000) -> list[str]:
    """What is wrong with one page, as it loads in the browser (Mermaid blocks not rendered
    within ``mermaid_ms`` of the load count as not rendered)."""
    page = browser.new_page()
    found: list[str] = []
    page.on("console", lambda m: found.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: found.append(f"exception: {e}"))
    page.on("requestfailed", lambda r: found.append(f"request failed: {r.url}"))
    page.on(
        "request",
        lambda r: None if r.url.startswith((base, "data:", "blob:")) else found.append(r.url),
    )
    try:
        page.goto(f"{base}/{path}", wait_until="networkidle")
        seen = page.evaluate(INSPECT)
        if seen["unrendered"]:
            # Mermaid renders after the page's own load, one block after another: wait for the
            # last, up to a bound, before judging
            try:
                page.wait_for_function(f"({INSPECT})().unrendered.length === 0", timeout=mermaid_ms)
            except PlaywrightTimeout:
                pass
            seen = page.evaluate(INSPECT)
    finally:
        page.close()
    found += [f"broken image: {src}" for src in seen["images"]]
    found += [f"Mermaid not rendered: {text!r}" for text in seen["unrendered"]]
    return found


def test_every_page_opens_clean(site, browser):
    folder, base = site
    paths = pages(folder)
    assert len(paths) > 30, paths
    bad = {path: p for path in paths if (p := problems(browser, base, path))}
    assert bad == {}


def test_the_diagrams_render(site, browser):
    """Mermaid blocks and SVG images are on the pages that show them (so the check above
    looked at some)."""
    folder, base = site
    page = browser.new_page()
    try:
        page.goto(f"{base}/explanation/lifecycle/", wait_until="networkidle")
        page.wait_for_function(f"({INSPECT})().unrendered.length === 0")
        assert page.evaluate(INSPECT)["mermaid"] >= 1
        page.goto(f"{base}/tutorials/counterexample/", wait_until="networkidle")
        assert page.evaluate("() => document.images.length") >= 1
    finally:
        page.close()


def test_a_broken_page_is_seen(site, browser):
    """The checks can fail: a page with a missing image, a Mermaid block nothing renders and a
    console error is reported on all three counts."""
    folder, base = site
    broken = folder / "broken" / "index.html"
    broken.parent.mkdir()
    broken.write_text(
        "<html><body><img src='missing.svg'>"
        "<pre class='mermaid'>flowchart LR\n a --> b</pre>"  # no script renders it
        "<script>console.error('boom')</script></body></html>"
    )
    # the page loads no Mermaid script: its block stays unrendered however long the wait, so a
    # short one (the site's pages wait up to 30 s for theirs)
    found = problems(browser, base, "broken/index.html", mermaid_ms=1_000)
    assert any(f.startswith("broken image") for f in found), found
    assert any(f.startswith("Mermaid not rendered") for f in found), found
    assert any(f == "console: boom" for f in found), found
