"""The README shows what the model says."""

from pathlib import Path

from mcp_inflight import draw

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_mermaid_block_is_the_generated_lifecycle():
    assert draw.mermaid_lifecycle("2025-11-25").rstrip("\n") in README.read_text()
