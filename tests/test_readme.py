"""The README: short, its set-up commands and tour as the code has them, its links into the docs
site alive; the pages that took over its sections show what the model says."""

import re
from pathlib import Path

from mcp_inflight import draw

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SETUP = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/mcp-inflight check\n"
    ".venv/bin/python -m pytest -q -n 4\n"
)


def python_block(text: str, after: str) -> str:
    return re.search(r"```python\n(.*?)```", text[text.index(after) :], re.S).group(1)


def test_readme_is_short():
    assert len(README.read_bytes()) < 12_000


def test_readme_keeps_the_two_setup_commands():
    assert "```sh\n" + SETUP + "```" in README.read_text()


def test_readme_links_point_at_files():
    links = re.findall(r"\]\(((?:docs/|ARCHITECTURE)[^)#\s]*)", README.read_text())
    assert links, "the README links into the docs"
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_readme_repeats_no_benchmark_figure():
    """The figures live in bench/RESULTS.md (the docs' results page) only."""
    text = README.read_text()
    assert re.findall(r"[\d.,]+ ?(?:states/s|calls/s|us per|x the official)", text) == []


def test_readme_ci_file_is_the_tutorials():
    section = "## Check your own server in CI"
    tutorial = (DOCS / "tutorials" / "ci.md").read_text()
    assert python_block(README.read_text(), section) == python_block(tutorial, "```python")


def test_lifecycle_page_mermaid_block_is_the_generated_lifecycle():
    page = (DOCS / "explanation" / "lifecycle.md").read_text()
    assert draw.mermaid_lifecycle("2025-11-25").rstrip("\n") in page


def test_docs_links_into_diagrams_point_at_generated_files():
    links = []
    for page in DOCS.rglob("*.md"):
        for link in re.findall(r"\]\(((?:\.\./)*diagrams/[^)#\s]+)\)", page.read_text()):
            links.append((page, (page.parent / link).resolve()))
    assert links, "the docs link the diagrams"
    generated = (ROOT / "diagrams").resolve()
    # a link from docs/X/page.md to ../diagrams/F resolves to docs/diagrams/F on disk: the site
    # serves diagrams/ there (docs/_hooks/build.py)
    missing = [
        (page.name, target)
        for page, target in links
        if not (generated / target.relative_to((DOCS / "diagrams").resolve())).is_file()
    ]
    assert missing == []
