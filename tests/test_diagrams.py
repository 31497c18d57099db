"""The lifecycle diagrams are deterministic, complete, drift-checked and follow the table."""

from __future__ import annotations

import html
import shutil

import pytest

from mcp_inflight import draw
from mcp_inflight.model import lifecycle as lc

HAVE_DOT = shutil.which("dot") is not None


def _texts(d, rev):
    out = {"dot": (d / f"lifecycle-{rev}.dot").read_text(),
           "mmd": (d / f"lifecycle-{rev}.mmd").read_text()}
    if HAVE_DOT:
        out["svg"] = html.unescape((d / f"lifecycle-{rev}.svg").read_text())
    return out


def test_deterministic(tmp_path):
    a = {p.name: p.read_bytes() for p in draw.generate(tmp_path / "a")}
    b = {p.name: p.read_bytes() for p in draw.generate(tmp_path / "b")}
    assert a == b
    assert len(a) == len(lc.REVISIONS) * (3 if HAVE_DOT else 2)
    for name, data in a.items():
        assert b"graphviz version" not in data and str(tmp_path).encode() not in data


def test_check_passes_then_detects_stale_and_missing(tmp_path):
    draw.generate(tmp_path)
    ok, report = draw.check(tmp_path)
    assert ok, report
    rev = lc.REVISIONS[0]
    stale = tmp_path / f"lifecycle-{rev}.mmd"
    stale.write_text(stale.read_text().replace("send", "sned", 1))
    (tmp_path / f"lifecycle-{lc.REVISIONS[1]}.dot").unlink()
    ok, report = draw.check(tmp_path)
    assert not ok
    assert f"stale:   lifecycle-{rev}.mmd" in report
    assert f"missing: lifecycle-{lc.REVISIONS[1]}.dot" in report
    assert "-    unsent --> sent : sned" in report and "+    unsent --> sent : send" in report


def test_run_exit_codes(tmp_path, capsys):
    assert draw.run(["--out", str(tmp_path)]) == 0
    assert draw.run(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / f"lifecycle-{lc.REVISIONS[0]}.dot").write_text("stale\n")
    assert draw.run(["--out", str(tmp_path), "--check"]) == 1
    assert draw.run(["--bogus"]) == 2


@pytest.mark.parametrize("rev", lc.REVISIONS)
def test_every_state_and_trigger_in_every_format(tmp_path, rev):
    draw.generate(tmp_path)
    for fmt, text in _texts(tmp_path, rev).items():
        for s in lc.STATES:
            assert s in text, (fmt, s)
        for r in lc.table(rev):
            label = r["trigger"] + (" [" + ", ".join(r["conditions"]) + "]"
                                    if r["conditions"] else "")
            assert label in text, (fmt, label)
        assert "model/session.py CONDITIONS" in text, fmt


def test_revisions_differ_where_the_table_differs(tmp_path):
    old, new = lc.REVISIONS
    assert 'in_flight" -> "stream_broken" [label="stream_closed [stream_open]"' in draw.dot_lifecycle(old)
    assert 'in_flight" -> "cancelled" [label="stream_closed"' in draw.dot_lifecycle(new)
    assert "in_flight --> stream_broken : stream_closed [stream_open]" in draw.mermaid_lifecycle(old)
    assert "in_flight --> cancelled : stream_closed\n" in draw.mermaid_lifecycle(new)

    def edges(text):
        return {l.strip() for l in text.splitlines() if "-->" in l or "->" in l}

    a, b = edges(draw.mermaid_lifecycle(old)), edges(draw.mermaid_lifecycle(new))
    assert a - b == {"in_flight --> stream_broken : stream_closed [stream_open]"}
    assert b - a == {"in_flight --> cancelled : stream_closed"}


def test_committed_diagrams_are_current():
    import pathlib
    ok, report = draw.check(pathlib.Path(__file__).resolve().parent.parent / "diagrams")
    assert ok, report


def test_without_dot_svg_is_skipped_with_one_warning(tmp_path, monkeypatch, capsys):
    draw.generate(tmp_path)
    monkeypatch.setattr(draw, "_dot_binary", lambda: None)
    written = draw.generate(tmp_path / "nodot")
    assert all(p.suffix != ".svg" for p in written)
    assert capsys.readouterr().err.count("warning") == 1
    ok, report = draw.check(tmp_path)
    assert ok, report
    assert "SVG files were not compared" in report
