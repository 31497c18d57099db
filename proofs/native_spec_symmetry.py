"""The least renaming of a declared model's state, in C: the native engine's symmetry reduction.

``proofs/declared_symmetry.py:Canon`` keeps of each orbit its least member, by Python's tuple
comparison of states, over every renaming of ``group(spec, key)``, where ``key`` is the number
of used slots of each ``ordered`` sort (``used``).  :func:`canon_source` is the same in C for
``proofs/native_spec_c.py``'s packed states (one signed byte a slot, the variables in
declaration order, a keyed variable's slots in key order):

* ``canon_key(s)``: per ordered sort its used count as ``used`` counts it (a slot is used when a
  variable keyed by the sort, naming no sort or starting at ``NONE``, is off its initial value
  there; 0 when the used slots are not a prefix), the counts joined into one index;
* a table per key, one row per renaming of the group but the identity (and rows that move no
  byte otherwise), as ``renamer`` builds it: for each byte of the renamed state, the byte of
  ``s`` it comes from (a keyed slot moved to its renamed key) and the map its value goes
  through (a ``ref``'s renaming, ``NONE`` kept; none for a fresh slot of an ordered sort);
* ``canon(s, out)``: ``out`` the least of ``s`` and its renamings, compared byte by byte as
  signed values (``NONE`` is -1, below every name), which is the order of Python's tuple
  comparison on states of these fixed shapes.  A renaming is abandoned at its first byte
  above the best so far.  With ``RANKS`` (a spec whose ``canon`` is its ranks), each
  renaming, the identity included, is followed by ``ranks`` before it is compared, as
  ``renamer`` follows it by the ``canon``: every renamed state is built whole first.

A spec with a ``canon`` that is not its ranks (a Python function) is not read here (the native
engine refuses it; no spec has one today), nor a group of more than :data:`MAX_ROWS` renamings
in all.
"""

from __future__ import annotations

from itertools import product
from math import prod

from mcp_inflight.model.declare import Spec
from mcp_inflight.model.logic import NONE

from .declared_symmetry import Renaming, group, ordered, sources

#: renamings tabulated at most, over every key (each a row of a byte's source and map a slot):
#: beyond, the table would be most of the C the compiler reads
MAX_ROWS = 20_000


def _map_of(perm: tuple[int, ...]) -> tuple[int, ...]:
    """The 256 signed values a byte's value (read unsigned) goes to under ``perm``: a name to
    its new name, ``NONE`` and every other value kept."""
    m = [x - 256 if x > 127 else x for x in range(256)]
    for k, to in enumerate(perm):
        m[k & 0xFF] = to
    m[NONE & 0xFF] = NONE
    return tuple(m)


def row_of(
    spec: Spec, pi: Renaming, key: tuple[int, ...], maps: dict[tuple[int, ...], int]
) -> list[tuple[int, int]]:
    """Per byte of ``pi``'s renaming of a packed state whose ordered sorts have ``key`` used
    slots: the byte of the state it comes from and the number of the map its value goes through
    (``maps``, added to: 0 is no map), as ``declared_symmetry.renamer`` renames."""
    fresh_from = dict(zip(ordered(spec), key, strict=True))
    out: list[tuple[int, int]] = []
    at = 0
    for v in spec.vars:
        vp = pi.of(v.ref)
        mid = 0 if vp is None else maps.setdefault(_map_of(vp), len(maps))
        if v.keys is None:
            out.append((at, mid))
            at += 1
            continue
        inv = sources(pi, v.sort, v.keys)
        first_fresh = fresh_from.get(v.sort, v.keys) if v.sort is not None else v.keys
        out += [(at + k, mid if k < first_fresh else 0) for k in inv]
        at += v.keys
    return out


class Untabulated(ValueError):
    """A reduction this module does not generate (``proofs/native_spec_c.py`` refuses the spec
    with the reason)."""


def canon_source(spec: Spec) -> str:
    """The C of ``canon_key`` and ``canon`` for ``spec`` (see the module text);
    :class:`Untabulated` for a spec with a ``canon`` or too many renamings."""
    if spec.canon is not None and spec.ranks is None:
        raise Untabulated(
            "symmetry: the spec abstracts its states with a canon (a Python function the C "
            "can neither run nor rename through)"
        )
    sizes = list(ordered(spec).items())
    nslots = sum(1 if v.keys is None else v.keys for v in spec.vars)
    identity = [(k, 0) for k in range(nslots)]
    maps: dict[tuple[int, ...], int] = {tuple(x - 256 if x > 127 else x for x in range(256)): 0}
    starts, rows = [0], []
    for key in product(*(range(n + 1) for _, n in sizes)):
        seen: set[tuple[tuple[int, int], ...]] = set()
        for pi in group(spec, key):
            row = tuple(row_of(spec, pi, key, maps))
            if list(row) != identity and row not in seen:
                seen.add(row)
                rows.append(row)
            if len(rows) > MAX_ROWS:
                raise Untabulated(
                    f"symmetry: more than {MAX_ROWS} renamings to tabulate in C (the compiled "
                    "engine renames them in Python)"
                )
        starts.append(len(rows))
    lines = [f"#define NKEYS {len(starts) - 1}"]
    for o, (sort, n) in enumerate(sizes):
        lines += _used(spec, o, sort, n)
    strides = [prod(m + 1 for _, m in sizes[o + 1 :]) for o in range(len(sizes))]
    lines.append("static long canon_key(const sc *s) {")
    terms = [f"used_{o}(s) * {stride}L" for o, stride in enumerate(strides)]
    lines.append(f"    (void)s; return {' + '.join(terms) or '0'};")
    lines.append("}")
    by_id = sorted(maps, key=maps.__getitem__)
    lines.append(f"static const sc CMAP[{len(by_id)}][256] = {{")
    lines += ["    {" + ", ".join(map(str, m)) + "}," for m in by_id]
    lines.append("};")
    flat_src = [str(b) for row in rows for b, _ in row] or ["0"]
    flat_map = [str(m) for row in rows for _, m in row] or ["0"]
    lines.append(f"static const unsigned short CSRC[] = {{{', '.join(flat_src)}}};")
    lines.append(f"static const unsigned short CMID[] = {{{', '.join(flat_map)}}};")
    lines.append(f"static const long CROW[NKEYS + 1] = {{{', '.join(map(str, starts))}}};")
    return "\n".join(lines) + "\n" + CANON


def _used(spec: Spec, o: int, sort: str, n: int) -> list[str]:
    """``used_<o>(s)``: the used slots of ordered sort ``sort`` (``n`` values) in ``s``, or 0
    when they are no prefix (``declared_symmetry.used``, where None counts 0 in ``Canon.key``)."""
    base, at = {}, 0
    for v in spec.vars:
        base[v.name] = at
        at += 1 if v.keys is None else v.keys
    keyed = [
        (base[v.name], int(v.init))
        for v in spec.vars
        if v.sort == sort and v.keys is not None and (v.ref is None or v.init == NONE)
    ]
    flags = [" || ".join(f"s[{b + r}] != {init}" for b, init in keyed) or "0" for r in range(n)]
    return [
        f"static int used_{o}(const sc *s) {{",
        f"    const int u[{max(n, 1)}] = {{{', '.join(f'({f})' for f in flags) or '0'}}};",
        "    int k = 0;",
        f"    while (k < {n} && u[k]) k++;",
        f"    for (int r = k; r < {n}; r++) if (u[r]) return 0;",
        "    return k;",
        "}",
    ]


CANON = r"""
#if RANKS
/* out: the least of s and its renamings at s's key, each (the identity too) followed by the
   ranks, compared as signed bytes */
static void canon(const sc *s, sc *out) {
    sc t[NV];
    memcpy(out, s, NV);
    long key = canon_key(s);
    for (long g = CROW[key] - 1; g < CROW[key + 1]; g++) {
        if (g < CROW[key]) memcpy(t, s, NV);  /* the identity */
        else {
            const unsigned short *src = CSRC + g * NV, *mid = CMID + g * NV;
            for (int i = 0; i < NV; i++) t[i] = CMAP[mid[i]][(unsigned char)s[src[i]]];
        }
        ranks(t);
        for (int i = 0; i < NV; i++) {
            if (t[i] != out[i]) {
                if (t[i] < out[i]) memcpy(out, t, NV);
                break;
            }
        }
    }
}
#else
/* out: the least of s and its renamings at s's key, compared as signed bytes */
static void canon(const sc *s, sc *out) {
    memcpy(out, s, NV);
    long key = canon_key(s);
    for (long g = CROW[key]; g < CROW[key + 1]; g++) {
        const unsigned short *src = CSRC + g * NV, *mid = CMID + g * NV;
        int i = 0;
        for (; i < NV; i++) {
            sc v = CMAP[mid[i]][(unsigned char)s[src[i]]];
            if (v != out[i]) {
                if (v > out[i]) goto next;
                break;
            }
        }
        for (; i < NV; i++) out[i] = CMAP[mid[i]][(unsigned char)s[src[i]]];
    next:;
    }
}
#endif
"""
