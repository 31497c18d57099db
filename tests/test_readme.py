"""The README shows what the model says."""

from pathlib import Path

from mcp_inflight import draw

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_mermaid_block_is_the_generated_lifecycle():
    assert draw.mermaid_lifecycle("2025-11-25").rstrip("\n") in README.read_text()


def test_readme_links_into_diagrams_point_at_generated_files():
    import re

    root = README.parent
    links = re.findall(r"\]\((diagrams/[^)#\s]+)\)", README.read_text())
    assert links, "the README links the diagrams"
    missing = [link for link in links if not (root / link).is_file()]
    assert missing == []
