"""The explorer's native engine: the model's rules generated as C, the whole BFS in C.

Calling each rule of ``model/`` once with the code-generating backend of ``model/codegen.py``
(C spelling of the operations, :data:`C_SYNTAX`), for a fixed configuration and fixed action
arguments ``(r, i)``, yields C for that rule specialised to them, as ``proofs/compiled_model.py``
does for Python.  This module joins the guards, outputs, effects, step properties, state
properties and ``settled`` of every move into one C file together with a breadth-first search
(states packed one signed byte per slot of the flat layout of ``proofs/flat.py``, an open-
addressing hash set of their keys, parent pointers), builds it once per configuration with the C compiler
(the shared object is cached under a directory keyed by a hash of the source) and runs it
through :mod:`ctypes`.  Nothing here states a lifecycle rule.

The C side hands back counts (states, transitions, per-move coverage, deadlocks, depth), and for
each property its first event (the index of the state, and for a step property the move taken
from it); the moves from the initial state to that state come from the parent pointers and
are replayed here through ``model/step.py`` (``step.take``) to build the trace, so a move
sequence that the reference semantics does not allow fails loudly.  States are found in the
same order as the Python engines (levels in order, moves in ``step.moves`` order), so counts,
verdicts and shortest traces are the same; ``tests/test_native.py`` compares them.

What it supports: every design and profile, symmetry reduction (the canonical key of
``proofs/flat.py:canonical_source`` computed the same way in C, so one state per orbit and the
same representatives), ``max_states``, progress, and liveness: with ``liveness`` the search
also keeps the state graph (an edge per move to another state; per state whether it is settled,
its stuttering move and whether a fair move leaves it), node for node the compiled engine's, and
``proofs/liveness.py`` judges it: the graph's work (reachability of a settled state, stuck
states, strongly connected components and their fairness) and the requests pending in the
states a fair run can stay among in C (``nb_live``, ``nb_pending``), the lassos' walks in
Python, looking states up in the C search's own table; and both cores: a level's states
expanded on two threads and handed over in order (``proofs/native_threads.py``; the same run,
field for field).  What it does not: ``on_edge`` (the state graph stays in C).  Without a C
compiler it is unavailable (:func:`available`).

Semantics kept from the generated Python: every key, value and condition of an effect is read on
the pre-state, the writes are then applied in list order; a write whose key is ``NONE`` is a
model bug and stops the run (``NativeError``); reading a registry slot by a key that may be
``NONE`` reads the last slot, as Python's tuple indexing does.  On stdio the send times are
renumbered after every step as ``model.session_state.canonical_clock`` does (ranks by (time, slot)).

The C text of the search (the same for every configuration) is in ``proofs/native_search.py``;
this module (about 800 lines) keeps the rest together: the generation, the build and the run
share one contract, the C functions' names and signatures, the packed layout and the event
records, which the :mod:`ctypes` declarations of ``load`` and the reading of results in
``search_native`` must match line for line; split further, each part would restate it.  The
cache directory is ``proofs/cache.py``'s.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from mcp_inflight.model import codegen, step
from mcp_inflight.model.codegen import Gen, Source
from mcp_inflight.model.config import Config
from mcp_inflight.model.eventually import fair_actions, pending_in
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import Write
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.property_kinds import Property, judged
from mcp_inflight.model.session import actions_for
from mcp_inflight.model.session_state import FIELDS, Cmsg, domains, settled
from mcp_inflight.proofs import native_build
from mcp_inflight.proofs.flat import FieldCode, Layout, canonical_source
from mcp_inflight.proofs.native_build import (
    CFLAGS,
    PARALLEL_FROM,
    QUICK_CFLAGS,
    NativeError,
    build,
    default_threads,
    open_library,
)
from mcp_inflight.proofs.native_search import API, RUNTIME
from mcp_inflight.proofs.native_threads import DRIVER, RECORDS

if TYPE_CHECKING:
    from mcp_inflight.proofs.records import RunResult

C_SYNTAX = codegen.Syntax("1", "0", " && ", " || ", "(!{x})", "({c} ? {a} : {b})", False)
#: For a search at ``check``'s default bound or below (at most :data:`QUICK_UP_TO` ids x
#: instances: well under a million states), building costs more than searching: gcc builds
#: the session's C 4-5x faster at -O0, and the search runs 1.6-2x slower (bench/RESULTS.md).
#: So too with symmetry at two instances and up to three ids: at most 610 thousand states
#: (unguarded 2025-11-25 http; 2-3 thousand on 2026-07-28), where the -O2 build was most of
#: the time to a verdict (0.55-1.6 s of 0.6-1.9 s in ``bench/explore_vs_spin.py``).
QUICK_UP_TO = 4


def flags_for(cfg: Config, symmetry: bool = False) -> list[str]:
    """The C flags for ``cfg``'s search: :data:`QUICK_CFLAGS` up to the default bound, and with
    ``symmetry`` at two instances and up to three ids."""
    quick = cfg.ids * cfg.requests <= QUICK_UP_TO or (
        symmetry and cfg.requests <= 2 and cfg.ids <= 3
    )
    return QUICK_CFLAGS if quick else CFLAGS


class CExpr(codegen.Expr):
    """A C expression (``&&``, ``||``, ``!``, ``(c ? a : b)``, booleans as 1/0)."""

    __slots__ = ()
    syntax = C_SYNTAX


class CGen(Gen):
    expr = CExpr


def lit(x: object) -> str:
    return codegen.lift(x, C_SYNTAX)


# --- reading the packed state ---------------------------------------------------------------


class _Field(FieldCode):
    __slots__ = ()

    def __getitem__(self, k: Any) -> codegen.Expr:
        neg = self.sort == "inst?"
        if isinstance(k, codegen.Expr):
            if k.maybe_neg:  # Python's s[-1]: the last slot
                idx = f"((({k.src}) % {self.n} + {self.n}) % {self.n})"
            else:
                idx = f"({k.src})"
            pos = (
                f"{self.base} + {idx} * {self.stride}"
                if self.stride != 1
                else f"{self.base} + {idx}"
            )
            return CExpr(f"{self.var}[{pos}]", neg)
        return CExpr(f"{self.var}[{self.position(k)}]", neg)


class CView:
    """A state as the model reads it, generating C over the byte array ``var``."""

    def __init__(self, layout: Layout, var: str):
        for f in FIELDS:
            b = layout.base[f.name]
            if f.key is None:
                setattr(self, f.name, CExpr(f"{var}[{b}]", f.sort == "inst?"))
            else:
                setattr(
                    self,
                    f.name,
                    _Field(var, b, layout.size[f.name], f.sort, layout.stride[f.name]),
                )


# --- generation -----------------------------------------------------------------------------


def _writes(lay: Layout, writes: list[Write], src: Source, d: int, m: int) -> None:
    """Keys, values and conditions from ``s``, then ``t`` = ``s`` with the writes in order."""
    live: list[tuple[str | None, str | None, str, str | None]] = []
    for j, w in enumerate(writes):
        if not isinstance(w.when, codegen.Expr) and not w.when:
            continue
        f = w.field
        base, stride = lay.base[f], lay.stride[f]
        cond = None
        if isinstance(w.when, codegen.Expr):
            src.emit(d, f"int w{j} = {w.when.src};")
            cond = f"w{j}"
        val = lit(w.value)
        if isinstance(w.value, codegen.Expr):
            src.emit(d, f"int v{j} = {val};")
            val = f"v{j}"
        if w.key is None:
            live.append((str(base), None, val, cond))
        elif isinstance(w.key, codegen.Expr):
            src.emit(d, f"int k{j} = {w.key.src};")
            pos = f"{base} + k{j} * {stride}" if stride != 1 else f"{base} + k{j}"
            live.append((pos, f"k{j}" if w.key.maybe_neg else None, val, cond))
        else:
            k = int(w.key)
            if k < 0:
                live.append((None, repr(k), val, cond))
            else:
                live.append((str(lay.pos(f, k)), None, val, cond))
    src.emit(d, "memcpy(t, s, W);")
    for at, check, val, cond in live:
        dd = d
        if cond is not None:
            src.emit(dd, f"if ({cond}) {{")
            dd += 1
        if check is not None:
            src.emit(dd, f"if ({check} < 0) {{ *err = {m + 1}; return -1; }}")
        if at is not None:
            src.emit(dd, f"t[{at}] = (sc)({val});")
        if cond is not None:
            src.emit(d, "}")


def _clock(lay: Layout, cfg: Config, src: Source, d: int) -> None:
    """stdio: ``model.session_state.canonical_clock`` on ``t`` (ranks among undelivered messages,
    ties broken by slot as the sort of ``proofs/compiled_model.py`` does)."""
    n = cfg.requests
    P = lay.pos
    src.emit(d, f"{{ int pv[{2 * n}], pp[{2 * n}], rk[{2 * n}], np = 0;")
    for r in range(n):
        src.emit(
            d + 1,
            f"if (t[{P('life', r)}] == {int(Life.SENT)}) "
            f"{{ pv[np] = t[{P('ts', r)}]; pp[np++] = {P('ts', r)}; }}",
        )
        src.emit(
            d + 1,
            f"if (t[{P('cmsg', r)}] == {int(Cmsg.WIRE)}) "
            f"{{ pv[np] = t[{P('cts', r)}]; pp[np++] = {P('cts', r)}; }}",
        )
    src.emit(d + 1, "for (int a = 0; a < np; a++) { int k = 0;")
    src.emit(
        d + 2,
        "for (int b = 0; b < np; b++) if (pv[b] < pv[a] || (pv[b] == pv[a] && pp[b] < pp[a])) k++;",
    )
    src.emit(d + 2, "rk[a] = k; }")
    for r in range(n):
        src.emit(d + 1, f"t[{P('ts', r)}] = 0; t[{P('cts', r)}] = 0;")
    src.emit(d + 1, "for (int a = 0; a < np; a++) t[pp[a]] = (sc)rk[a];")
    src.emit(d + 1, f"t[{lay.base['clock']}] = (sc)np; }}")


def _canonical(cfg: Config, lay: Layout) -> tuple[int, str]:
    """C of ``make_key(s, key)``: the canonical name of the orbit of ``s`` under renaming of ids
    and instances, the algorithm of ``proofs/flat.py:canonical_source`` step for step (instance
    signatures; ids ordered by the sorted signatures of their sent instances, ties by id;
    instances by signature, renamed id and index; every field renamed).  Its width."""
    canonical_source(cfg, lay)  # refuses a model whose fields it cannot rename
    n, ids, W = cfg.requests, cfg.ids, lay.W
    regs = [f.name for f in FIELDS if f.key == "id" and f.sort == "inst?"]
    others = [f.name for f in FIELDS if f.key == "id" and f.sort != "inst?"]
    scalars = [f.name for f in FIELDS if f.key is None]
    sigw = W - 1 + len(regs)
    kw = n * (sigw + 1) + ids * (len(regs) + len(others)) + len(scalars)

    def arr(name: str, xs: list[int]) -> str:
        return f"static const int {name}[{max(len(xs), 1)}] = {{{', '.join(map(str, xs)) or '0'}}};"

    text = f"""
#define KN {n}
#define KIDS {ids}
#define SIGW {sigw}
{arr("REGB", [lay.base[g] for g in regs])}
{arr("OTHB", [lay.base[g] for g in others])}
{arr("SCB", [lay.base[g] for g in scalars])}
{arr("RIDP", [lay.pos("rid", r) for r in range(n)])}
{arr("LIFEP", [lay.pos("life", r) for r in range(n)])}
static int cmp_ints(const int *a, const int *b, int len) {{
    for (int k = 0; k < len; k++) if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}}
static void make_key(const sc *s, unsigned char *key) {{
    int h[KN][SIGW + 2], rid[KN], sent[KN];
    for (int r = 0; r < KN; r++) {{
        rid[r] = s[RIDP[r]];
        sent[r] = s[LIFEP[r]] != {int(Life.UNSENT)};
        for (int k = 0; k < {W - 1}; k++) h[r][k] = s[r * {W} + k];
        for (int g = 0; g < {len(regs)}; g++) h[r][{W - 1} + g] = s[REGB[g] + rid[r]] == r;
    }}
    int D[KIDS][KN], nd[KIDS];
    for (int k = 0; k < KIDS; k++) nd[k] = 0;
    for (int r = 0; r < KN; r++) if (sent[r]) D[rid[r]][nd[rid[r]]++] = r;
    for (int k = 0; k < KIDS; k++)
        for (int a = 1; a < nd[k]; a++)
            for (int b = a; b > 0 && cmp_ints(h[D[k][b]], h[D[k][b - 1]], SIGW) < 0; b--) {{
                int x = D[k][b]; D[k][b] = D[k][b - 1]; D[k][b - 1] = x;
            }}
    int ko[KIDS], P[KIDS];
    for (int k = 0; k < KIDS; k++) ko[k] = k;
    for (int a = 1; a < KIDS; a++)
        for (int b = a; b > 0; b--) {{
            int x = ko[b], y = ko[b - 1], c = 0;
            for (int j = 0; !c && j < nd[x] && j < nd[y]; j++) c = cmp_ints(h[D[x][j]], h[D[y][j]], SIGW);
            if (!c) c = nd[x] != nd[y] ? (nd[x] < nd[y] ? -1 : 1) : (x < y ? -1 : 1);
            if (c >= 0) break;
            ko[b] = y; ko[b - 1] = x;
        }}
    for (int j = 0; j < KIDS; j++) P[ko[j]] = j;
    int o[KN], sg[KN + 1];
    for (int r = 0; r < KN; r++) {{ h[r][SIGW] = sent[r] ? P[rid[r]] : rid[r]; h[r][SIGW + 1] = r; o[r] = r; }}
    for (int a = 1; a < KN; a++)
        for (int b = a; b > 0 && cmp_ints(h[o[b]], h[o[b - 1]], SIGW + 2) < 0; b--) {{
            int x = o[b]; o[b] = o[b - 1]; o[b - 1] = x;
        }}
    sg[KN] = KN;
    for (int j = 0; j < KN; j++) sg[o[j]] = j;
    int at = 0;
    for (int j = 0; j < KN; j++) for (int k = 0; k <= SIGW; k++) key[at++] = (unsigned char)h[o[j]][k];
    for (int g = 0; g < {len(regs)}; g++)
        for (int j = 0; j < KIDS; j++) {{ int x = s[REGB[g] + ko[j]]; key[at++] = (unsigned char)sg[x < 0 ? KN : x]; }}
    for (int g = 0; g < {len(others)}; g++)
        for (int j = 0; j < KIDS; j++) key[at++] = (unsigned char)s[OTHB[g] + ko[j]];
    for (int g = 0; g < {len(scalars)}; g++) key[at++] = (unsigned char)s[SCB[g]];
}}
"""
    return kw, text


class Generated:
    """The C source of one configuration, and what its indices mean."""

    def __init__(
        self,
        cfg: Config,
        properties: Sequence[Property] = PROPERTIES,
        symmetry: bool = False,
        graph: bool = False,
    ):
        self.cfg = cfg
        self.symmetry = symmetry
        self.graph = graph
        self.layout = lay = Layout(cfg)
        b = CGen(domains(cfg))
        pre = CView(lay, "s")
        post = CView(lay, "t")
        props = [p for p in judged(properties) if p.applies(cfg)]
        self.step_props = [p for p in props if p.scope == "step"]
        self.state_props = [p for p in props if p.scope == "state"]
        if len(self.step_props) > 30:
            raise NativeError("more than 30 step properties: widen the C engine's bit mask")
        self.moves = step.moves(cfg)
        if len(self.moves) > 32000:
            raise NativeError("too many moves for the C engine's 16-bit move index")
        head = Source()
        head.emit(0, f"/* {cfg.label} {cfg.ids}x{cfg.requests}: generated from model/ */")
        head.emit(0, f"#define W {lay.width}")
        head.emit(0, f"#define NMOVES {len(self.moves)}")
        head.emit(0, f"#define NSTEP {len(self.step_props)}")
        head.emit(0, f"#define NSTATE {len(self.state_props)}")
        head.emit(0, "typedef signed char sc;")
        head.emit(0, f"#define GRAPH {int(graph)}")
        if graph:  # the moves requests_answered owes weak fairness to (proofs/liveness.py)
            fair = set(fair_actions("requests_answered", cfg))
            flags = ", ".join("1" if mv.action.name in fair else "0" for mv in self.moves)
            head.emit(0, f"static const unsigned char FAIR[NMOVES] = {{{flags}}};")
        if symmetry:
            kw, canon = _canonical(cfg, lay)
            head.emit(0, "#define SYM 1")
            head.emit(0, f"#define KW {kw}")
            head.lines.append(canon)
        else:
            head.emit(0, "#define SYM 0")
            head.emit(0, "#define KW W")
        src = Source()
        # state properties: an event is a failing invariant/hazard or a reached witness
        for j, p in enumerate(self.state_props):
            v = lit(p.fn(b, pre, cfg))
            ev = f"({v})" if p.kind == "witness" else f"!({v})"
            src.emit(0, f"static int state_event_{j}(const sc *s) {{ return {ev}; }}")
        src.emit(0, "static void judge_state(Run *R, const sc *s, long idx) {")
        for j in range(len(self.state_props)):
            src.emit(
                1, f"if (R->first_state[{j}] < 0 && state_event_{j}(s)) R->first_state[{j}] = idx;"
            )
        src.emit(0, "}")
        src.emit(0, f"static int settled_(const sc *s) {{ return {lit(settled(b, pre))}; }}")
        # some client request is pending (the liveness judge reads it on the states of the
        # components a fair run can stay in)
        pend = b.Or(*[pending_in(b, pre, r) for r in range(cfg.requests)])
        src.emit(0, f"static int pending_(const sc *s) {{ return {lit(pend)}; }}")
        # one function for both ways of taking a transition: at once (``edge``; ``B`` null) or
        # recorded for nb_run_par's hand-over (``rec``, on a worker thread; ``R`` null)
        src.emit(0, "static int expand(Run *R, Rec *B, const sc *s, sc *t, long si) {")
        src.emit(1, "int n = 0;")
        src.emit(1, "int *err = B ? &B->error : &R->error;")
        for m, mv in enumerate(self.moves):
            self._move(b, pre, post, cfg, m, mv, src)
        src.emit(1, "return n;")
        src.emit(0, "}")
        self.source = head.text() + RUNTIME + RECORDS + src.text() + DRIVER + API

    def _move(
        self, b: CGen, pre: CView, post: CView, cfg: Config, m: int, mv: Any, src: Source
    ) -> None:
        a, r, i = mv.action, mv.r, mv.i
        guard = a.guard(b, pre, cfg, r, i)
        if not isinstance(guard, codegen.Expr) and not guard:
            return
        out = a.output(b, pre, cfg, r, i)
        src.emit(1, f"/* {a.name} r={r} i={i} */")
        src.emit(1, f"if ({lit(guard)}) {{")
        d = 2
        hoisted = {}
        for n_, kind in enumerate(tuple(out)):
            t_, d_ = out[kind]
            names = []
            for part, val in (("t", t_), ("d", d_)):
                if isinstance(val, codegen.Expr):
                    src.emit(d, f"int o{part}{n_} = {val.src};")
                    names.append(CExpr(f"o{part}{n_}", val.maybe_neg))
                else:
                    names.append(val)
            hoisted[kind] = tuple(names)
        writes = a.effect(b, pre, cfg, r, i, hoisted)
        _writes(self.layout, writes, src, d, m)
        if cfg.stdio:
            _clock(self.layout, cfg, src, d)
        src.emit(d, "int bad = 0;")
        for j, p in enumerate(self.step_props):
            # the event: a step invariant or hazard fails, a step witness is reached
            v = p.fn(b, pre, post, cfg, a, r, i, hoisted)
            wit = p.kind == "witness"
            if isinstance(v, codegen.Expr):
                src.emit(d, f"if ({'' if wit else '!'}({v.src})) bad |= {1 << j};")
            elif bool(v) == wit:
                src.emit(d, f"bad |= {1 << j};")
        src.emit(d, "n++;")
        src.emit(d, f"if (B) rec(B, s, t, si, {m}, bad); else edge(R, s, t, si, {m}, bad);")
        src.emit(d, "if (*err) return -1;")
        src.emit(1, "}")


_L, _P, _LP = ctypes.c_long, ctypes.c_void_p, ctypes.POINTER(ctypes.c_long)
#: the C functions of ``proofs/native_search.py`` as :mod:`ctypes` sees them: (result, arguments);
#: a result of None is ``void``
SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "nb_new": (_P, [ctypes.c_char_p, _L]),
    "nb_run": (ctypes.c_int, [_P, _L]),
    "nb_run_par": (ctypes.c_int, [_P, _L, ctypes.c_int, _L]),
    "nb_stats": (None, [_P, _LP]),
    "nb_level": (_L, [_P, _L]),
    "nb_results": (None, [_P, _LP, _LP, _LP, _LP]),
    "nb_path": (_L, [_P, _L, ctypes.POINTER(ctypes.c_int), _L]),
    "nb_free": (None, [_P]),
    "nb_find": (_L, [_P, ctypes.c_char_p]),
    "nb_state": (None, [_P, _L, _P]),
    "nb_edges": (_L, [_P]),
    "nb_graph": (None, [_P] * 7),
    "nb_live": (_L, [_P] * 4),
    "nb_pending": (_L, [_P, _L]),
}


def load(source: str, flags: list[str] = CFLAGS) -> ctypes.CDLL:
    """The search of ``source``, built (or read from the cache) and loaded."""
    return cast(ctypes.CDLL, open_library(build(source, flags), SIGNATURES))


# --- the search -----------------------------------------------------------------------------


def search_native(
    cfg: Config,
    symmetry: bool = False,
    max_states: int | None = None,
    progress: Any = None,
    properties: Sequence[Property] = PROPERTIES,
    on_edge: Any = None,
    liveness: bool = False,
    threads: int | None = None,
    parallel_from: int = PARALLEL_FROM,
) -> RunResult:
    """``proofs.session_search.search`` with ``engine="native"`` (see the module docstring).  With
    ``liveness`` the C search also keeps the state graph, and the liveness properties of
    ``proofs/liveness.py`` are judged on it (:func:`_judge_liveness`).

    ``threads``: how many threads expand a level's states (``nb_run_par``; None:
    :func:`default_threads`); a batch of fewer than ``parallel_from`` states is expanded on one.
    The states, their numbering, counts, verdicts and traces are the same on any number."""
    from mcp_inflight.model.trace import build_trace
    from mcp_inflight.proofs.progress import Tracker, sink_for
    from mcp_inflight.proofs.records import RunResult, Verdict

    if on_edge is not None:
        raise ValueError("the native engine does not take on_edge")
    t0 = time.monotonic()
    prog = Tracker(f"{cfg.label} {cfg.ids}x{cfg.requests}", sink_for(progress))
    threads = default_threads() if threads is None else max(1, threads)
    gen = Generated(cfg, properties, symmetry, graph=liveness)
    before = native_build.compiles
    lib = load(gen.source, flags_for(cfg, symmetry))
    built = time.monotonic() - t0
    lay = gen.layout
    s0 = step.start(cfg)
    flat0 = lay.flatten(s0)
    init = bytes(v & 0xFF for v in flat0)
    limit = max_states if max_states is not None else (1 << 31) - 2
    R = lib.nb_new(init, min(limit, (1 << 31) - 2))
    if not R:
        raise NativeError("out of memory")
    st = (ctypes.c_long * 12)()
    try:
        fed = 1  # levels handed to the tracker (level 0 is in it already)
        budget = 4096
        while True:
            c0 = time.monotonic()
            if threads > 1:
                rc = lib.nb_run_par(R, budget, threads, parallel_from)
            else:
                rc = lib.nb_run(R, budget)
            lib.nb_stats(R, st)
            if rc < 0:
                err = st[9]
                if err > 0:
                    mv = gen.moves[err - 1]
                    raise NativeError(
                        f"{mv.action.name} {mv.args}: a write to an unmasked NONE key (model bug)"
                    )
                raise NativeError("out of memory")
            if prog.enabled:
                nlevels = st[10]  # levels 0 .. nlevels-1 finished or being expanded
                while fed < nlevels:
                    prog.level(lib.nb_level(R, fed))
                    fed += 1
                prog.tick(st[0], st[3], st[0] - st[2], st[0] - st[5])
            if rc == 1:
                break
            # about a tenth of a second per slice, so progress and Ctrl-C are heard
            spent = time.monotonic() - c0
            budget = max(1024, min(1 << 22, int(budget * 0.1 / max(spent, 1e-4))))
        lib.nb_stats(R, st)
        nstate, nstep, nmoves = len(gen.state_props), len(gen.step_props), len(gen.moves)
        fs = (ctypes.c_long * max(nstate, 1))()
        fst = (ctypes.c_long * max(nstep, 1))()
        fsm = (ctypes.c_long * max(nstep, 1))()
        mc = (ctypes.c_long * nmoves)()
        lib.nb_results(R, fs, fst, fsm, mc)
        buf = (ctypes.c_int * 100_000)()

        def moves_to(idx: int) -> list[int]:
            n = lib.nb_path(R, idx, buf, len(buf))
            return [buf[k] for k in range(n)][::-1]

        res = RunResult(cfg, symmetry)
        on = f" on {threads} threads" if st[11] else ""
        res.engine = (
            f"native{on}, C built in {built:.2f}s"
            if native_build.compiles > before
            else f"native{on}, C from the cache"
        )
        res.states, res.transitions, res.depth = st[0], st[1], st[3]
        res.complete = bool(st[6])
        res.deadlocks = st[7]
        prog.done(res.states, res.transitions, res.depth, res.complete)
        b = step.backend(cfg)

        def replay(ms: list[int]) -> list[Any]:
            steps = []
            s = s0
            for m in ms:
                tr = step.take(cfg, s, gen.moves[m], b)
                if tr is None:
                    raise NativeError("a move of the native search is not enabled in model/step.py")
                steps.append((tr.action, tr.args, s, tr.post))
                s = tr.post
            return steps

        res.coverage = {a.name: 0 for a in actions_for(cfg)}
        for mv, n in zip(gen.moves, mc, strict=True):
            res.coverage[mv.action.name] += n
        if st[8] >= 0:
            res.deadlock_trace = build_trace(cfg, replay(moves_to(st[8])))
        first: dict[str, list[int]] = {}
        for j, p in enumerate(gen.state_props):
            if fs[j] >= 0:
                first[p.name] = moves_to(fs[j])
        for j, p in enumerate(gen.step_props):
            if fst[j] >= 0:
                first[p.name] = moves_to(fst[j]) + [fsm[j]]
        for p in properties:
            ap = p.applies(cfg)
            hit = first.get(p.name) if ap else None
            trace = build_trace(cfg, replay(hit)) if hit is not None else None
            ok = (hit is not None) if p.kind == "witness" else (hit is None)
            res.verdicts.append(
                Verdict(p.name, p.kind, ap, ok if ap else True, trace, p.doc, through=p.through)
            )
        if liveness:
            res.verdicts.extend(
                _judge_liveness(
                    lib, R, gen, properties, res.complete, lambda n: replay(moves_to(n))
                )
            )
        res.seconds = time.monotonic() - t0
        return res
    finally:
        lib.nb_free(R)


class _Key:
    """A state's key for :func:`proofs.liveness._walk`, carrying the state: equal when the keys
    are (the walk's "met again up to renaming"), looked up in the C search's table by the
    state (:class:`_Index`)."""

    __slots__ = ("key", "flat")

    def __init__(self, key: Any, flat: tuple[Any, ...]) -> None:
        self.key, self.flat = key, flat

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.key == other.key


class _Index:
    """The node of a state, read from the C search's hash table (no table in Python)."""

    def __init__(self, lib: Any, run: Any) -> None:
        self.lib, self.run = lib, run

    def _find(self, k: _Key) -> int:
        return int(self.lib.nb_find(self.run, bytes(v & 0xFF for v in k.flat)))

    def __contains__(self, k: object) -> bool:
        return isinstance(k, _Key) and self._find(k) >= 0

    def __getitem__(self, k: _Key) -> int:
        n = self._find(k)
        if n < 0:
            raise KeyError(k.key)
        return n


def _judge_liveness(
    lib: Any,
    run: Any,
    gen: Generated,
    properties: Sequence[Property],
    complete: bool,
    path: Any,
) -> list[Any]:
    """The liveness verdicts of a native run, judged by ``proofs/liveness.py`` on the graph the
    C search kept: the same graph, node for node, as the compiled engine's (nodes in the order
    met, an edge per move to another state, the stuttering and fair moves of each node), so the
    same verdicts and lassos.  The graph's work (backward reachability, stuck states, strongly
    connected components and their fairness) and the pending requests of the states of the
    components a fair run can stay in run in C (``nb_live``, ``nb_pending``); the walks of a
    lasso, in Python, take the compiled rules' moves."""
    from mcp_inflight.proofs.compiled_model import Compiled
    from mcp_inflight.proofs.flat import key_function
    from mcp_inflight.proofs.liveness import judge_liveness

    cfg = gen.cfg
    comp = Compiled(cfg, properties)
    if [(m.action.name, m.args) for m in comp.moves] != [
        (m.action.name, m.args) for m in gen.moves
    ]:
        raise NativeError("the compiled and native engines number the moves differently")
    st = (ctypes.c_long * 12)()
    lib.nb_stats(run, st)
    key_of = key_function(cfg, comp.layout, gen.symmetry)
    width = comp.layout.width
    state = (ctypes.c_byte * width)()

    def flat(n: int) -> tuple[Any, ...]:
        lib.nb_state(run, n, state)
        return tuple(state)

    return judge_liveness(
        cfg,
        comp,
        partial(_found, lib, run, int(st[2])),
        complete,
        path,
        lambda t: _Key(key_of(t), t),
        _Index(lib, run),
        flat,
    )


def _found(lib: Any, run: Any, nodes: int, state_of: Any) -> Any:
    """``proofs/liveness.py:find`` of a native run's graph: ``nb_live`` in C, then whether a
    client request is pending in every state of each component where a fair run can stay, by
    least node (``nb_pending``: ``model/eventually.py:pending_in`` generated as C; the states
    are not read back, ``state_of`` is not needed)."""
    from mcp_inflight.proofs.liveness import Found

    size = max(nodes, 1)
    flags, comps, trap = (
        (ctypes.c_ubyte * size)(),
        (ctypes.c_int32 * size)(),
        (ctypes.c_ubyte * size)(),
    )
    ncomp = lib.nb_live(run, flags, comps, trap)
    if ncomp < 0:
        raise NativeError("out of memory" if ncomp == -1 else "the search kept no graph")
    fl, traps = bytes(flags)[:nodes], bytes(trap)[:ncomp]
    comp_of = memoryview(comps).cast("B").cast("i")[:nodes]
    never = [v for v, f in enumerate(fl) if not f & 1]
    dead = [v for v, f in enumerate(fl) if f & 2]
    members: dict[int, list[int]] = {}
    for v, c in enumerate(comp_of):
        if traps[c]:
            members.setdefault(c, []).append(v)
    # nodes are met in index order, so each list starts at its component's least node
    for ms in sorted(members.values()):
        if all(lib.nb_pending(run, u) for u in ms):
            return Found(nodes, never, dead, ms[0], set(ms))
    return Found(nodes, never, dead, None, set())


if __name__ == "__main__":  # pragma: no cover - print the generated C of one configuration
    from mcp_inflight.model import DESIGNS

    d, rev, tr, ids, req = sys.argv[1:6]
    sys.stdout.write(Generated(Config(DESIGNS[d], rev, tr, ids=int(ids), requests=int(req))).source)
