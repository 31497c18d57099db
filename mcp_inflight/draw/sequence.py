"""Sequence diagrams of the counterexamples the explorer finds, as Mermaid and Graphviz.

For every design on every profile, at the default bound (2 ids, 2 request instances),
the one explorer is run once (``explore(cfg)``, with symmetry, as ``mcp-inflight check`` runs
it) and every invariant
that fails gets one diagram of its shortest trace (today: ``unguarded`` and
``check_then_claim``; ``atomic`` none), and so does every protocol hazard that fails (one that
no server design can avoid on that profile, drawn for each design).  The injected liveness bugs
(``model/config.py:liveness_mutants``) are explored with the graph kept, and each liveness
property they fail is drawn as its lasso, the note on the last step saying which steps repeat.

Lanes, left to right: the client, the rogue (when it sends), one lane per request instance's
stream (its POST stream on Streamable HTTP; on stdio, the request and the messages that carry
its id on the one channel), and the server core.  Every step of the trace is exactly one arrow, in
trace order, numbered like the trace:

* a send goes from its sender to the instance's stream (the POST that opens it);
* the server reading a request goes from that stream to the server core;
* steps inside the server (check, claim, admit, unwind) are arrows from the core to itself;
* a message the server writes (progress/log, elicitation, response, refusal) goes from the core
  to the stream the model's ``Action.output`` says it was written on.  When that is another
  instance's stream, the arrow is marked MISROUTED (in a red box); a message that is dropped
  ends in a cross;
* a cancel goes from its sender to the core (``notifications/cancelled``), or closes the
  instance's stream on 2026-07-28 http; its delivery is a core step, marked WRONG TARGET when it
  cancels an instance other than the one it means.

Where the registries ``inflight`` and ``stream`` change, a note on the core says how, and the
step where the invariant breaks carries a note naming it.  The outputs are recomputed by
replaying the trace through the model (guard, ``Action.output``, effect); the replay checks that
every step is enabled and changes exactly what the trace says.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from mcp_inflight.model import step
from mcp_inflight.model.config import DESIGNS, Config, liveness_mutants, profiles
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.properties import PROPERTY
from mcp_inflight.model.session import ACTION
from mcp_inflight.model.trace import changes, id_name, inst_name
from mcp_inflight.proofs.explorer import explore

from .render import quote

#: Every design is explored: ``unguarded`` and ``check_then_claim`` break invariants, and every
#: design, ``atomic`` included, meets the protocol hazards (``model/properties.py``).
DESIGNS_DRAWN = ("atomic", "unguarded", "check_then_claim")
#: The injected liveness bugs, drawn with the lasso of each liveness property they fail, on the
#: two smallest profiles that show them (one with elicitation, one without).
LIVENESS_DRAWN = tuple(liveness_mutants())
LIVENESS_PROFILES = (("2025-11-25", "stdio"), ("2026-07-28", "http"))
RED = "#c62828"
RED_FILL = "#ffd6d6"
_WHAT = {"progress": "progress/log", "server_request": "elicitation/create", "response": "response"}


@dataclass(frozen=True)
class Arrow:
    """One step of the trace as drawn: ``src``/``dst`` lane keys, the arrow kind, its label."""

    step: int  # 1-based, as in the trace
    action: str
    src: str
    dst: str
    kind: str  # "sync" (->>), "async" (-)), "lost" (-x)
    text: str
    marked: str | None = None  # "MISROUTED" / "WRONG TARGET" / None
    registry: str = ""  # registry changes, "inflight[1]: A -> B, ..."


@dataclass
class Sequence:
    cfg: Config
    invariant: str  # the property's name (an invariant or a protocol hazard)
    scope: str
    kind: str  # "invariant" | "hazard" | "liveness"
    lanes: list  # [(key, title)]
    arrows: list
    trace: list
    loop_start: int | None = None  # liveness: the steps from this one on repeat forever

    @property
    def name(self) -> str:
        c = self.cfg
        return f"{c.design.name}-{c.revision}-{c.transport}-{self.invariant}"

    @property
    def title(self) -> str:
        c = self.cfg
        what = {"hazard": "protocol hazard ", "liveness": "liveness "}.get(self.kind, "")
        return f"{what}{self.invariant} fails on {c.design.name}, {c.revision} {c.transport}"


def _inst(name: str) -> int:
    return ord(name) - ord("A")


def _id(name: str) -> int:
    return int(name) - 1


def lane_of(r: int) -> str:
    return f"S{inst_name(r)}"


def replay(cfg: Config, trace: list) -> list:
    """``[(action, r, i, pre, post, out)]`` for each step of ``trace``, through the model."""
    b = step.backend(cfg)
    s = step.start(cfg)
    steps = []
    for n, st in enumerate(trace, 1):
        a = ACTION[st["action"]]
        r = _inst(st["args"]["r"])
        i = _id(st["args"]["i"]) if "i" in st["args"] else None
        tr = step.take(cfg, s, step.Move(a, r, i), b)
        if tr is None:
            raise RuntimeError(f"{cfg.label}: step {n} ({st['story']}) is not enabled on replay")
        out, t = tr.out, tr.post
        if changes(s, t) != st["changes"]:
            raise RuntimeError(
                f"{cfg.label}: step {n} ({st['story']}) changes "
                f"{changes(s, t)} on replay, not {st['changes']}"
            )
        steps.append((a, r, i, s, t, out))
        s = t
    return steps


def _registry_note(ch: dict) -> str:
    return ", ".join(
        f"{k}: {v[0]} → {v[1]}" for k, v in ch.items() if k.startswith(("inflight[", "stream["))
    )


def arrows(cfg: Config, trace: list) -> tuple[list, list]:
    """The lanes and one :class:`Arrow` per step of ``trace``."""
    steps = replay(cfg, trace)
    senders = {}
    insts = []
    for a, r, _i, _pre, _post, _out in steps:
        if a.name in ("client_sends", "rogue_sends"):
            senders[r] = "R" if a.name == "rogue_sends" else "C"
            insts.append(r)
    res = []
    uses: set[str] = set()
    for n, (a, r, i, pre, post, out) in enumerate(steps, 1):
        R = inst_name(r)
        sender = senders.get(r, "C")
        idt = id_name(pre.rid[r] if i is None else i)
        marked = None
        kind = "sync"
        name = a.name
        if name in ("client_sends", "rogue_sends"):
            src, dst, kind = sender, lane_of(r), "async"
            text = f"{'POST ' if cfg.http else ''}tools/call id={idt} ({R})"
        elif name == "arrive":
            src, dst = lane_of(r), "S"
            text = f"server reads {R}'s request"
        elif name in ("check", "claim_stream", "admit", "unwind"):
            src = dst = "S"
            text = {
                "check": f"transport checks id={idt} for {R}: not in flight",
                "claim_stream": f"transport stores {R}'s stream under id={idt}",
                "admit": f"admit {R} (id={idt})",
                "unwind": f"cancelled handler {R} stops",
            }[name]
        elif name == "answer":
            src, dst = sender, "S"
            w, resolves = out["answer"]
            text = f"answer to server request {id_name(i)}"
            if not resolves:
                text += ": reaches no handler (ignored)"
            else:
                text += f": resolves {inst_name(w)}'s wait"
                if senders.get(w, "C") != sender:
                    marked = "WRONG HANDLER"
        elif name == "send_cancel":
            if cfg.close_is_cancel:
                src, dst, kind = sender, lane_of(r), "lost"
                text = f"closes {R}'s stream (cancel)"
            else:
                src, dst, kind = sender, "S", "async"
                text = f"notifications/cancelled id={idt} (meant for {R})"
        elif name == "deliver_cancel":
            hit = [q for q in range(cfg.requests) if pre.life[q] != post.life[q]]
            src = lane_of(r) if cfg.close_is_cancel else "S"
            dst = "S"
            what = (
                f"close of {R}'s stream reaches the core"
                if cfg.close_is_cancel
                else f"cancel meant for {R} arrives"
            )
            if not hit:
                text = what + ": nothing cancelled"
            else:
                text = what + ": cancels " + ", ".join(inst_name(q) for q in hit)
                if any(q != r for q in hit):
                    marked = "WRONG TARGET"
        elif name == "break_stream":
            src, dst, kind = lane_of(r), "S", "lost"
            text = f"{R}'s POST stream breaks"
        elif out:
            ((what, (t, d)),) = out.items()
            label = {
                "refuse": "error -32600 (refused)",
                "reject": "error (the session has ended)",
            }.get(name, f"{_WHAT[what]} of {R}")
            if t == NONE:
                src, dst, kind = "S", "S", "lost"
                text = f"{label}: dropped, no stream under id={idt}"
            else:
                src, dst = "S", lane_of(t)
                if not d:
                    kind = "lost"
                    text = (
                        f"{label}: dropped ({inst_name(t)}'s stream is closed)"
                        if t != r
                        else f"{label}: dropped"
                    )
                elif t != r:
                    marked = "MISROUTED"
                    text = f"{label} written on {inst_name(t)}'s stream"
                else:
                    text = label
        else:  # an action without output that this module does not know: draw it on the core
            src = dst = "S"
            text = a.story.format(r=R, i=idt, id=idt, sender=sender)
        uses.update((src, dst))
        res.append(
            Arrow(n, name, src, dst, kind, text, marked, _registry_note(trace[n - 1]["changes"]))
        )
    lanes = []
    if "C" in uses or "C" in senders.values():
        lanes.append(("C", "client"))
    if "R" in uses or "R" in senders.values():
        lanes.append(("R", "rogue"))
    used = {k for k in map(_lane_inst, uses) if k is not None}
    for r in sorted(set(insts) | used):
        who = {"C": "client", "R": "rogue"}.get(senders.get(r, ""), "")
        if cfg.http:
            title = f"{inst_name(r)}: {who} POST stream"
        else:
            title = f"{inst_name(r)}: {who} request on stdio"
        lanes.append((lane_of(r), title.replace("  ", " ")))
    lanes.append(("S", "server core"))
    return lanes, res


def _lane_inst(key: str) -> int | None:
    if key.startswith("S") and len(key) == 2:
        return _inst(key[1])
    return None


#: Explorer results by configuration, kept for the life of the process (``clear()`` forgets).
_RESULTS: dict = {}


def clear() -> None:
    _RESULTS.clear()


def _explore(cfg: Config) -> Any:
    return explore(cfg, progress=False, liveness=cfg.design.name in LIVENESS_DRAWN)


def results(cfgs: list[Config], progress: Any = None) -> list[Any]:
    """``explore(cfg)`` for each of ``cfgs`` (in that order), run in parallel processes when the
    machine has more than one CPU; each result is the explorer's, whichever process ran it.
    Results are kept in the checkers' cache on disk, keyed by the source of the model and the
    checkers, so an unchanged model is not explored again by the next process."""
    from mcp_inflight.proofs import cache as store

    keys = {c: store.source_key("sequence-draw", c, c.design.name in LIVENESS_DRAWN) for c in cfgs}
    for c in dict.fromkeys(cfgs):
        if c not in _RESULTS:
            found = store.load("sequence-draw", keys[c])
            if found is not None:
                _RESULTS[c] = found
    todo = [c for c in dict.fromkeys(cfgs) if c not in _RESULTS]
    # the 2025-11-25 http runs are the longest: start them first
    todo.sort(key=lambda c: (not (c.rev2025 and c.http), not c.http))
    workers = min(len(todo), os.cpu_count() or 1)
    done = 0

    def tick(cfg: Config) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(f"explored {cfg.label} for counterexamples ({done}/{len(todo)})")

    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            futures = {pool.submit(_explore, c): c for c in todo}
            for f in as_completed(futures):
                _RESULTS[futures[f]] = f.result()
                tick(futures[f])
    else:
        for c in todo:
            _RESULTS[c] = _explore(c)
            tick(c)
    for c in todo:
        store.store("sequence-draw", keys[c], _RESULTS[c])
    return [_RESULTS[c] for c in cfgs]


def configs() -> list[Config]:
    mut = liveness_mutants()
    return [Config(DESIGNS[d], rev, tr) for d in DESIGNS_DRAWN for rev, tr in profiles()] + [
        Config(mut[d], rev, tr) for d in LIVENESS_DRAWN for rev, tr in LIVENESS_PROFILES
    ]


def sequences(cfgs: list[Config] | None = None, progress: Any = None) -> list[Sequence]:
    """One :class:`Sequence` per failing invariant or hazard, design and profile, in a fixed
    order (designs, then profiles, then properties as ``model/properties.py`` lists them)."""
    out = []
    cfgs = configs() if cfgs is None else cfgs
    for cfg, res in zip(cfgs, results(cfgs, progress), strict=False):
        for v in res.verdicts:
            drawn_bug = cfg.design.name in LIVENESS_DRAWN
            if v.kind in ("invariant", "hazard") and v.applies and not v.ok and not drawn_bug:
                lanes, arr = arrows(cfg, v.trace)
                out.append(
                    Sequence(cfg, v.name, PROPERTY[v.name].scope, v.kind, lanes, arr, v.trace)
                )
            elif v.kind == "liveness" and not v.ok and v.trace is not None:
                lanes, arr = arrows(cfg, v.trace)
                out.append(
                    Sequence(cfg, v.name, "state", v.kind, lanes, arr, v.trace, v.loop_start)
                )
    return out


# --- Mermaid ------------------------------------------------------------------------------

_MERMAID_ARROW = {"sync": "->>", "async": "-)", "lost": "-x"}


def _mm(text: str) -> str:
    """Mermaid message text: no ``;`` or ``#`` (they end or escape a message)."""
    return text.replace(";", ",").replace("#", "no. ")


def _breaks_note(seq: Sequence) -> str:
    if seq.kind == "liveness":
        last = len(seq.trace)
        if seq.loop_start is None or seq.loop_start >= last:
            return f"{seq.invariant} fails: the run stays here for ever, no move it is owed enabled"
        return f"{seq.invariant} fails: steps {seq.loop_start + 1}-{last} repeat forever"
    where = "on this step" if seq.scope == "step" else "in the state after this step"
    return f"{seq.invariant} breaks {where}"


def mermaid(seq: Sequence) -> str:
    lines = ["---", f"title: {seq.title}", "---", "sequenceDiagram"]
    for key, title in seq.lanes:
        lines.append(f"    participant {key} as {title}")
    last = len(seq.arrows)
    for a in seq.arrows:
        label = f"{a.step}. {a.text}"
        if a.marked:
            label += f"  {a.marked}"
        arrow = f"    {a.src}{_MERMAID_ARROW[a.kind]}{a.dst}: {_mm(label)}"
        bad = a.marked is not None or a.step == last
        if bad:
            lines.append("    rect rgb(255, 214, 214)")
        lines.append(arrow)
        if a.registry:
            lines.append(f"    Note right of S: {_mm(a.registry)}")
        if a.step == last:
            lines.append(f"    Note over {seq.lanes[0][0]},S: {_mm(_breaks_note(seq))}")
        if bad:
            lines.append("    end")
    return "\n".join(lines) + "\n"


# --- Graphviz -----------------------------------------------------------------------------


def dot(seq: Sequence) -> str:
    """The sequence diagram in DOT: one column per lane (dashed lifelines), one row per step."""
    keys = [k for k, _ in seq.lanes]
    col = {k: n for n, k in enumerate(keys)}
    last = len(seq.arrows)
    lines = [
        f"digraph {quote(seq.name)} {{",
        "    rankdir=TB;",
        "    newrank=true;",
        "    nodesep=0.25;",
        "    ranksep=0.18;",
        "    splines=false;",
        '    fontname="Helvetica";',
        "    fontsize=14;",
        "    labelloc=t;",
        f"    label={quote(seq.title)};",
        '    node [fontname="Helvetica", fontsize=10];',
        '    edge [fontname="Helvetica", fontsize=10];',
        "",
    ]
    for k, title in seq.lanes:
        lines.append(
            f'    h_{k} [shape=box, style="rounded,filled", fillcolor="#eef2f7", '
            f"label={quote(title)}];"
        )
    lines.append(
        "    { rank=same; " + " -> ".join(f"h_{k}" for k in keys) + " [style=invis, weight=0]; }"
    )
    lines.append('    h_note [shape=plaintext, label="registries", fontcolor="grey30"];')
    lines.append(f"    {{ rank=same; h_{keys[-1]} -> h_note [style=invis]; }}")
    prev = {k: f"h_{k}" for k in keys}
    prev["note"] = "h_note"
    for a in seq.arrows:
        n = a.step
        row = []
        bad = a.marked is not None or n == last
        colour = RED if bad else "black"
        label = f"{n}. {a.text}" + (f"\n{a.marked}" if a.marked else "")
        self_step = a.src == a.dst
        for k in keys:
            node = f"p{n}_{k}"
            if self_step and k == a.src:
                lines.append(
                    f'    {node} [shape=box, style="rounded{",filled" if bad else ""}", '
                    f'fillcolor="{RED_FILL}", color="{colour}", fontcolor="{colour}", '
                    f"label={quote(label)}];"
                )
            else:
                lines.append(f'    {node} [shape=point, width=0.04, color="grey60"];')
            row.append(node)
        note = a.registry
        if n == last:
            note = (note + "\n" if note else "") + _breaks_note(seq)
        nn = f"p{n}_note"
        if note:
            style = f', style=filled, fillcolor="{RED_FILL}", color="{RED}"' if n == last else ""
            lines.append(f"    {nn} [shape=note, fontsize=9{style}, label={quote(note)}];")
        else:
            lines.append(f"    {nn} [shape=point, style=invis, width=0.01];")
        lines.append("    { rank=same; " + " -> ".join(row + [nn]) + " [style=invis]; }")
        for k in keys:
            lines.append(
                f'    {prev[k]} -> p{n}_{k} [style=dashed, color="grey70", '
                "arrowhead=none, weight=100];"
            )
            prev[k] = f"p{n}_{k}"
        lines.append(f"    {prev['note']} -> {nn} [style=invis, weight=100];")
        prev["note"] = nn
        if not self_step:
            left, right = sorted((a.src, a.dst), key=col.__getitem__)
            forward = left == a.src
            head = {"sync": "normal", "async": "vee", "lost": "tee"}[a.kind]
            attrs = [
                f"label={quote(label)}",
                f'color="{colour}"',
                f'fontcolor="{colour}"',
                "constraint=false",
            ]
            if forward:
                attrs.append(f"arrowhead={head}")
            else:
                attrs += ["dir=back", f"arrowtail={head}"]
            if bad:
                attrs.append("penwidth=2")
            if a.kind == "async":
                attrs.append("style=dashed")
            lines.append(f"    p{n}_{left} -> p{n}_{right} [{', '.join(attrs)}];")
    lines.append("")
    legend = (
        "Solid arrow: delivered now.  Dashed, open head: on the wire, read later.\\l"
        "Bar head: dropped or closed.  Box on the core: a step inside the server.\\l"
        "Registries: inflight[id] and stream[id] as they change ('-' = empty).\\l"
        "Red: the message that went to the wrong place, the cancel that hit the wrong\\l"
        "request, and the step where the invariant (or hazard) breaks.\\l"
    )
    lines.append(
        f'    legend [shape=note, style=filled, fillcolor="#f6f6f6", fontsize=9, label="{legend}"];'
    )
    lines.append(f"    {prev[keys[0]]} -> legend [style=invis];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def index(seqs: list[Sequence]) -> str:
    """A Markdown page of every counterexample: links, the trace as text, the Mermaid inline."""
    lines = [
        "# Counterexample sequence diagrams",
        "",
        "Generated from `model/` by `mcp-inflight diagrams`: one diagram per invariant or "
        "protocol hazard that fails, per design and profile, at 2 ids and 2 request "
        "instances (the shortest trace `mcp-inflight check` finds). Each has a Mermaid "
        "(`.mmd`) and a Graphviz (`.dot`, `.svg`) version. Invariants first, then the "
        "protocol hazards, which no server design avoids on the profile named, then the "
        "liveness properties that the injected liveness bugs of `model/config.py` fail, each "
        "a lasso: a prefix, then steps that repeat forever. The client is the reusing one "
        "(it reuses an id once answered, `model/config.py:CLIENTS`); each property names whose "
        "requests it protects, and each hazard the sender it needs.",
        "",
    ]
    order = {"invariant": 0, "hazard": 1, "liveness": 2}
    for seq in sorted(seqs, key=lambda s: order[s.kind]):
        lines.append(f"## {seq.title}")
        lines.append("")
        lines.append(f"[SVG]({seq.name}.svg) | [Mermaid]({seq.name}.mmd) | [DOT]({seq.name}.dot)")
        lines.append("")
        prop = PROPERTY.get(seq.invariant)
        if prop is not None and prop.protects:
            needs = f"; needs {prop.needs}" if prop.needs else ""
            lines.append(f"Protects {prop.protects}{needs}.")
            lines.append("")
        for n, st in enumerate(seq.trace, 1):
            lines.append(f"{n}. {st['story'].replace('<--', '&larr;')}")
        lines.append("")
        lines.append("```mermaid")
        lines.append(mermaid(seq).rstrip("\n"))
        lines.append("```")
        lines.append("")
    return "\n".join(lines)


def files(progress: Any = None) -> dict[str, tuple[str, str | None]]:
    """``{relative name: (text, dot text to render or None)}``."""
    seqs = sequences(progress=progress)
    out: dict[str, tuple[str, str | None]] = {}
    for seq in seqs:
        d = dot(seq)
        out[f"counterexamples/{seq.name}.mmd"] = (mermaid(seq), None)
        out[f"counterexamples/{seq.name}.dot"] = (d, d)
    out["counterexamples/index.md"] = (index(seqs), None)
    return out
