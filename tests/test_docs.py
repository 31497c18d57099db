"""The docs site (``docs/``, ``mkdocs.yml``): it builds strict, every section the README used to
hold has a page, and each tutorial's commands run and print what the page shows.

A tutorial marks what the test does with an HTML comment (invisible on the site) before a fence:

- ``<!-- file: PATH -->``: the fenced block is written to PATH in the tutorial's working folder;
- ``<!-- run -->``, ``<!-- run exit=N -->``, ``<!-- run slow -->``,
  ``<!-- run slow needs=PROGRAM -->``: the fenced shell block is run there with bash (in page
  order, after every file is written), and must exit 0 (or N); ``slow`` blocks run with
  ``-m slow``, and a block whose PROGRAM is not installed is skipped, saying so;
- ``<!-- output -->``: every line of the fenced block must appear (within a printed line, so a
  time can be left out) in what the run block just before it printed; a line ``...`` stands for
  lines left out.

``.venv/bin/`` in a command means this interpreter's folder, so the commands run as printed in
any virtual environment. The working folder is a fresh temporary one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
BIN = Path(sys.executable).parent
MKDOCS_ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")

#: The headings of the README before its sections moved into the docs site: each must still be
#: a heading of some page.
OLD_README_HEADINGS = [
    "Set up and run",
    "What `mcp-inflight check` does",
    "Check a proposed fix: `--design-file`",
    "What a green `check` means",
    "JSON (`--json`)",
    "The lifecycle",
    "The model",
    "What the checker shows (2 ids, 2 instances; the prover agrees for any number)",
    "Liveness",
    "When a cancelled id is free again",
    "Protocol hazard: a stale cancel on 2025-11-25 Streamable HTTP",
    "Proofs for any number of requests (`mcp-inflight prove`)",
    "Mutants: atomic minus one safeguard",
    "Diagrams",
    "Walk the state space: `mcp-inflight explore`",
    "Run a server on the verified core",
    "Check what really ran: `mcp-inflight record` and `mcp-inflight replay`",
    "Probe any server: `mcp-inflight probe`",
    "Over stdio: `mcp-inflight probe --stdio -- COMMAND ...`",
    "2026-07-28: no session, two clients under one id",
    "Across SDKs: `bench/probe_table.py`",
    "A guard for servers on the official Python SDK",
    "The guard on the Python frameworks",
    "The lifecycle in OpenTelemetry",
    "Check your own server in CI",
    "Conformance",
    "Performance",
    "Input-required rounds and resumption, modelled",
    "Many workers: the lease protocol",
    "Many workers on Redis",
    "Limits, said plainly",
]

MARK = re.compile(r"<!--\s*(run|file|output)\b([^>]*?)-->\s*\n```[^\n]*\n(.*?)^```", re.S | re.M)


@dataclass
class Block:
    kind: str  # run, file or output
    options: dict[str, str]
    flags: set[str]
    body: str
    output: list[str] = field(default_factory=list)  # for a run block: the lines it must print


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    for kind, opts, body in MARK.findall(page.read_text()):
        words = opts.split()
        if kind == "file":
            options = {"path": opts.strip().lstrip(":").strip()}
            flags: set[str] = set()
        else:
            options = dict(w.split("=", 1) for w in words if "=" in w)
            flags = {w for w in words if "=" not in w}
        block = Block(kind, options, flags, body)
        if kind == "output":
            runs = [b for b in found if b.kind == "run"]
            assert runs, f"{page.name}: an output block with no run block before it"
            runs[-1].output += [line for line in body.splitlines() if line.strip() != "..."]
        else:
            found.append(block)
    return found


def run_tutorial(page: Path, tmp_path: Path, slow: bool) -> int:
    """Write the page's files, run its run blocks of the chosen speed; the number run."""
    found = blocks(page)
    for b in found:
        if b.kind == "file":
            target = tmp_path / b.options["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.body)
    ran = 0
    for b in found:
        if b.kind != "run" or ("slow" in b.flags) != slow:
            continue
        need = b.options.get("needs")
        if need and shutil.which(need) is None:
            pytest.skip(f"{page.name}: a block needs {need}, which is not installed")
        script = b.body.replace(".venv/bin/", f"{BIN}/")
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, COLUMNS="200"),
        )
        want = int(b.options.get("exit", "0"))
        assert done.returncode == want, (
            f"{page.name}: exit {done.returncode}, not {want}, from\n{b.body}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        missing = [line for line in b.output if not any(line.strip() in got for got in printed)]
        assert missing == [], f"{page.name}: not printed by\n{b.body}\n{missing}\n{done.stdout}"
        ran += 1
    return ran


def test_every_tutorial_has_commands_the_tests_run():
    bare = [p.name for p in TUTORIALS if not any(b.kind == "run" for b in blocks(p))]
    assert TUTORIALS and bare == []


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_fast_commands(page, tmp_path):
    run_tutorial(page, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_slow_commands(page, tmp_path):
    run_tutorial(page, tmp_path, slow=True)


def test_an_output_the_command_does_not_print_fails(tmp_path):
    page = tmp_path / "wrong.md"
    page.write_text("<!-- run -->\n```sh\necho one\n```\n\n<!-- output -->\n```text\ntwo\n```\n")
    with pytest.raises(AssertionError, match="not printed"):
        run_tutorial(page, tmp_path, slow=False)


def headings(text: str) -> set[str]:
    found, fence = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            found.add(line.lstrip("#").strip())
    return found


def test_every_section_of_the_old_readme_has_a_page():
    on_pages: set[str] = set()
    for page in DOCS.rglob("*.md"):
        on_pages |= headings(page.read_text())
    assert [h for h in OLD_README_HEADINGS if h not in on_pages] == []


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=MKDOCS_ENV,
        timeout=600,
    )


@pytest.mark.slow  # a whole mkdocs build: about 7 s of CPU; CI also builds the site
def test_the_site_builds_strict(tmp_path):
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


@pytest.mark.slow  # a whole mkdocs build: about 7 s of CPU; CI also builds the site
def test_a_broken_link_fails_the_build(tmp_path):
    """The strict build is not green whatever the pages say: a copy of the site with one broken
    link does not build."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copytree(DOCS, copy / "docs", symlinks=True)
    for name in ("mkdocs.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, copy / name)
    for name in ("diagrams", "bench", "mcp_inflight", "impl", "model", "proofs"):
        (copy / name).symlink_to(ROOT / name)
    page = copy / "docs" / "changelog.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


def test_the_cli_reference_is_every_command():
    sys.path.insert(0, str(DOCS / "_hooks"))
    try:
        import build as hook  # docs/_hooks/build.py
    finally:
        sys.path.remove(str(DOCS / "_hooks"))
    from mcp_inflight import cli

    text = hook.cli_reference()
    for name in ["check", *cli._available()]:
        assert f"## `mcp-inflight {name}`" in text
    assert "--version" in text
