"""Build-time hooks of the docs site (mkdocs.yml ``hooks:``).

Nothing the code knows is copied by hand into the pages:

- ``reference/cli.md`` is written at each build from every command's own ``--help`` output;
- the diagrams are the generated files of ``diagrams/`` (``mcp-inflight diagrams``), served
  under ``diagrams/`` as they are in the repository;
- Mermaid's script is served from the site itself (the pinned npm package, unpacked once into
  a cache), so that no page loads anything from another host.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
#: The Mermaid release the pages render with, and the SHA-256 of its ``dist/mermaid.min.js``.
MERMAID_VERSION = "11.17.2"
MERMAID_SHA256 = "581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8"
MERMAID_CACHE = Path(
    os.environ.get("MCP_INFLIGHT_MERMAID_CACHE", Path.home() / ".cache" / "mcp-inflight" / "docs")
)
#: The width help texts are wrapped at on the reference page.
HELP_COLUMNS = "100"
#: The link trees made by this build, removed after it.
LAYOUTS: list[Path] = []


def commands() -> list[str]:
    """Every subcommand of ``mcp-inflight``, as the top-level parser lists them."""
    from mcp_inflight import cli

    return ["check", *cli._available()]


def help_text(argv: list[str]) -> str:
    env = dict(os.environ, COLUMNS=HELP_COLUMNS, NO_COLOR="1")
    out = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", *argv, "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    if out.returncode != 0:
        raise RuntimeError(f"mcp-inflight {' '.join(argv)} --help failed: {out.stderr}")
    return out.stdout


def cli_reference() -> str:
    names = commands()
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(help_text, [[]] + [[n] for n in names]))
    parts = [
        "# Command line\n\n",
        "Generated at each build of this site from the commands' own `--help` output, so it "
        "says what the installed version does.\n\n",
        "## `mcp-inflight`\n\n```text\n",
        texts[0],
        "```\n\n",
    ]
    for name, text in zip(names, texts[1:], strict=True):
        parts += [f"## `mcp-inflight {name}`\n\n```text\n", text, "```\n\n"]
    return "".join(parts)


def mermaid_script() -> Path:
    """``mermaid.min.js`` of the pinned release: from the cache, or unpacked from ``npm pack``."""
    target = MERMAID_CACHE / f"mermaid-{MERMAID_VERSION}.min.js"
    if target.is_file() and _sha256(target) == MERMAID_SHA256:
        return target
    MERMAID_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", f"mermaid@{MERMAID_VERSION}", "--silent", "--pack-destination", tmp],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (tgz,) = Path(tmp).glob("mermaid-*.tgz")
        with tarfile.open(tgz) as tar:
            member = tar.extractfile("package/dist/mermaid.min.js")
            assert member is not None
            data = member.read()
    if hashlib.sha256(data).hexdigest() != MERMAID_SHA256:
        raise RuntimeError(f"mermaid {MERMAID_VERSION}: dist/mermaid.min.js has another hash")
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


JUNIT_COMMAND = [
    "check",
    "--model",
    "session",
    "--design",
    "unguarded",
    "--revision",
    "2026-07-28",
    "--transport",
    "stdio",
    "--no-prove",
    "--no-sensitivity",
    "--no-progress",
]


def junit_example(cases: int = 3) -> str:
    """The first test cases of a JUnit file that ``check`` writes, indented for reading."""
    import xml.etree.ElementTree as ET

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "check.xml"
        subprocess.run(
            [sys.executable, "-m", "mcp_inflight", *JUNIT_COMMAND, "--junit-xml", str(out)],
            capture_output=True,
            cwd=ROOT,
            timeout=300,
        )
        suite = ET.parse(out).getroot()
    for case in list(suite)[cases:]:
        suite.remove(case)
    ET.indent(suite)
    return "```xml\n" + ET.tostring(suite, encoding="unicode") + "\n```\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- junit-example -->" in markdown:
        markdown = markdown.replace("<!-- junit-example -->", junit_example())
    return markdown


def installed_layout() -> Path:
    """A directory in which ``mcp_inflight`` is laid out as installed (pyproject's package-dir
    maps ``impl/``, ``model/`` and ``proofs/`` into it), of links to the sources, so that the
    API reference finds ``mcp_inflight.impl`` where an import does."""
    import tomllib

    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    top = Path(tempfile.mkdtemp(prefix="mcp-inflight-api-"))
    package = top / "mcp_inflight"
    package.mkdir()
    for entry in (ROOT / dirs["mcp_inflight"]).iterdir():
        (package / entry.name).symlink_to(entry)
    for name, folder in dirs.items():
        if name != "mcp_inflight":
            (package / name.split(".", 1)[1]).symlink_to(ROOT / folder)
    return top


@event_priority(100)  # before mkdocstrings makes its handler, which reads the paths once
def on_config(config):
    handlers = config["plugins"]["mkdocstrings"].config["handlers"]
    layout = installed_layout()
    LAYOUTS.append(layout)
    handlers.setdefault("python", {})["paths"] = [str(layout)]
    return config


def on_files(files: Files, config) -> Files:
    site = config["site_dir"]
    urls = config["use_directory_urls"]
    for path in sorted((ROOT / "diagrams").rglob("*")):
        if path.is_file() and path.suffix in {".svg", ".mmd", ".md", ".dot"}:
            rel = path.relative_to(ROOT).as_posix()
            files.append(File(rel, src_dir=str(ROOT), dest_dir=site, use_directory_urls=urls))
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    script = mermaid_script()
    cached = File.generated(config, "assets/mermaid.min.js", abs_src_path=str(script))
    files.append(cached)
    return files


def on_post_build(config) -> None:
    # the hooks are not part of the site
    shutil.rmtree(Path(config["site_dir"]) / "_hooks", ignore_errors=True)
    while LAYOUTS:
        shutil.rmtree(LAYOUTS.pop(), ignore_errors=True)
