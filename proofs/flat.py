"""The explorer's flat state: one tuple per state, and its symmetry key.

A state of ``model.session_state.State`` (a namedtuple of per-field tuples) becomes one flat tuple:
each field of ``model.session_state.FIELDS`` in order, a keyed field taking one slot per key
(:class:`Layout`).  The explorer keeps states in this form while they wait in the queue; the
visited set keeps only a key per state, built here: the state's bytes, or with symmetry the
canonical name of its orbit under renaming of ids and instances (:func:`canonical_source`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from mcp_inflight.model.codegen import Source, compile_source
from mcp_inflight.model.config import Config
from mcp_inflight.model.lifecycle import Life
from mcp_inflight.model.logic import NONE
from mcp_inflight.model.session_state import FIELDS, State

# --- the flat layout -----------------------------------------------------------------------


def _plain(x: object) -> object:
    return int(x) if isinstance(x, int) and not isinstance(x, bool) else x


class Layout:
    """Where each field of ``FIELDS`` lives in the flat tuple for a configuration.

    Instance-major: instance r's fields are one block ``[r*W, (r+1)*W)`` (in ``FIELDS`` order,
    with ``rid`` last so that a block without its id is one slice), then the id-keyed fields
    (``ids`` slots each), then the scalars.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        inst = [f for f in FIELDS if f.key == "inst" and f.name != "rid"]
        inst += [f for f in FIELDS if f.name == "rid"]
        self.inst_fields = tuple(f.name for f in inst)
        self.W = W = len(inst)
        self.base: dict[str, int] = {}
        self.stride: dict[str, int] = {}
        self.size: dict[str, int] = {}
        for off, f in enumerate(inst):
            self.base[f.name] = off
            self.stride[f.name] = W
            self.size[f.name] = cfg.requests
        pos = W * cfg.requests
        for f in FIELDS:
            if f.key == "inst":
                continue
            n = cfg.ids if f.key == "id" else 1
            self.base[f.name] = pos
            self.stride[f.name] = 1
            self.size[f.name] = n
            pos += n
        self.width = pos

    def pos(self, field: str, k: int = 0) -> int:
        return self.base[field] + k * self.stride[field]

    def flatten(self, s: State) -> tuple[Any, ...]:
        """The flat tuple of ``s``.  Enumeration members become plain ints (the same values):
        the generated code compares and hashes them on every step, and Python's fast paths are
        for exact ints."""
        out: list[Any] = [None] * self.width
        for f in FIELDS:
            v = getattr(s, f.name)
            if f.key is None:
                out[self.base[f.name]] = _plain(v)
            else:
                for k, x in enumerate(v):
                    out[self.pos(f.name, k)] = _plain(x)
        return tuple(out)

    def unflatten(self, t: Sequence[Any]) -> State:
        vals = []
        for f in FIELDS:
            if f.key is None:
                vals.append(t[self.base[f.name]])
            else:
                vals.append(tuple(t[self.pos(f.name, k)] for k in range(self.size[f.name])))
        return State(*vals)


# --- symmetry on flat states ----------------------------------------------------------------


class FieldCode:
    """A keyed field of the flat state as generated code reads it (``var[base + k * stride]``,
    ``n`` keys of ``sort``); the engines' subclasses spell ``field[k]`` in their language."""

    __slots__ = ("var", "base", "n", "sort", "stride")

    def __init__(self, var: str, base: Any, n: int, sort: str, stride: int) -> None:
        self.var, self.base, self.n, self.sort, self.stride = var, base, n, sort, stride

    def __getitem__(self, k: Any) -> Any:  # pragma: no cover - every engine spells its own
        raise NotImplementedError

    def position(self, k: Any) -> int:
        """The flat position of a constant key (negative keys count from the end)."""
        k = int(k)
        if not -self.n <= k < self.n:
            raise IndexError(f"key {k} out of range")
        return int(self.base + (k % self.n) * self.stride)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Any]:
        return (self[k] for k in range(self.n))


def canonical_source(cfg: Config, lay: Layout) -> str:
    """Source of ``canon(s) -> bytes``: a canonical name of the orbit of flat state ``s`` under
    renaming of instances and of ids.

    Every field of ``FIELDS`` takes part, by its key and sort: an instance's signature is its
    block of instance-keyed fields without its id, plus, for each id-keyed field naming an
    instance, whether that field holds this instance under its own id.  Ids are ordered first, by
    the sorted signatures of the sent instances under each id; then instances are ordered by
    signature and renamed id; every field is renamed accordingly and the result encoded as
    bytes.  The key is always a renaming of ``s`` (so distinct orbits never share a key: sound);
    ids or instances tied on their signatures are interchangeable, so every member of an orbit
    gets the same key (exact: one state per orbit) -- where only the clients' ids use the id
    sort.  The server-minted ids of 2025-11-25 share it, and the ordering of ids reads the
    clients' instances alone: two ids that differ only in their server-side fields are ordered
    by index, so an orbit may get two keys there (the key is still a renaming: sound, with less
    reduction; ``tests/test_explore.py`` measures both).
    """
    n, ids, W = cfg.requests, cfg.ids, lay.W
    for f in FIELDS:
        if f.key == "inst" and (f.sort == "inst?" or (f.sort == "id" and f.name != "rid")):
            raise NotImplementedError(
                f"symmetry: per-instance field {f.name!r} of sort {f.sort!r} names another "
                "instance or an id; canonical_source must learn to rename it"
            )
        if f.key is None and f.sort in ("inst?", "id"):
            raise NotImplementedError(
                f"symmetry: scalar field {f.name!r} of sort {f.sort!r} must be renamed; "
                "canonical_source must learn to rename it"
            )
        if f.key == "id" and f.sort == "id":
            raise NotImplementedError(f"symmetry: id-keyed field {f.name!r} holds an id")
    P_ = lay.pos
    regs = [f.name for f in FIELDS if f.key == "id" and f.sort == "inst?"]
    others = [f.name for f in FIELDS if f.key == "id" and f.sort != "inst?"]
    scalars = [f.name for f in FIELDS if f.key is None]
    unsent = int(Life.UNSENT)
    src = Source()
    src.emit(0, "def canon(s):")

    def sent(r: int) -> str:
        """Whether instance ``r`` was sent, as generated code reads it."""
        life = f"s[{P_('life', r)}]"
        return life if unsent == 0 else f"({life} != {unsent})"

    for r in range(n):
        src.emit(1, f"r{r} = s[{P_('rid', r)}]")
        flags = "".join(f"s[{lay.base[g]} + r{r}] == {r}, " for g in regs)
        src.emit(1, f"h{r} = s[{r * W}:{r * W + W - 1}] + ({flags})")

    def finish(depth: int, pi: Sequence[int], prid: Callable[[int], str]) -> None:
        """Sort the instances under id renaming ``pi`` and return the encoded state."""
        gs = ", ".join(f"h{r} + ({prid(r)}, {r})" for r in range(n))
        src.emit(depth, f"o = sorted(({gs},))")
        src.emit(depth, f"sg = [{n}] * {n + 1}")
        for j in range(n):
            src.emit(depth, f"sg[o[{j}][-1]] = {j}")
        items = []
        for g in regs + others:
            for k_new in range(ids):
                x = f"s[{lay.base[g] + pi.index(k_new)}]"
                items.append(f"sg[{x}]" if g in regs else x)
        items += [f"s[{lay.base[g]}]" for g in scalars]
        src.emit(
            depth,
            "return bytes("
            + " + ".join(f"o[{j}][:-1]" for j in range(n))
            + f" + ({', '.join(items)},))",
        )

    if ids == 1:
        finish(1, (0,), lambda r: f"r{r}")
    elif ids == 2:
        # order the two ids by the sorted signatures of their sent instances
        src.emit(1, "a = []; b = []")
        for r in range(n):
            src.emit(1, f"if {sent(r)}: (b if r{r} else a).append(h{r})")
        src.emit(1, "a.sort(); b.sort()")
        src.emit(1, "if b < a:")
        finish(2, (1, 0), lambda r: f"((1 - r{r}) if {sent(r)} else r{r})")
        finish(1, (0, 1), lambda r: f"r{r}")
    else:
        src.emit(1, "D = (" + "[], " * ids + ")")
        for r in range(n):
            src.emit(1, f"if {sent(r)}: D[r{r}].append(h{r})")
        for k in range(ids):
            src.emit(1, f"D[{k}].sort()")
        src.emit(1, "ko = sorted((" + "".join(f"(D[{k}], {k}), " for k in range(ids)) + "))")
        src.emit(1, f"P = [0] * {ids}")
        for j in range(ids):
            src.emit(1, f"P[ko[{j}][1]] = {j}")
        gs = ", ".join(f"h{r} + ((P[r{r}] if {sent(r)} else r{r}), {r})" for r in range(n))
        src.emit(1, f"o = sorted(({gs},))")
        src.emit(1, f"sg = [{n}] * {n + 1}")
        for j in range(n):
            src.emit(1, f"sg[o[{j}][-1]] = {j}")
        src.emit(1, f"R = [0] * {ids * (len(regs) + len(others))}")
        for m, g in enumerate(regs + others):
            for k in range(ids):
                x = f"s[{lay.base[g] + k}]"
                src.emit(1, f"R[{m * ids} + P[{k}]] = " + (f"sg[{x}]" if g in regs else x))
        tail = "".join(f"s[{lay.base[g]}], " for g in scalars)
        src.emit(
            1,
            "return bytes("
            + " + ".join(f"o[{j}][:-1]" for j in range(n))
            + f" + tuple(R) + ({tail}))",
        )
    return src.text()


def decode_key(cfg: Config, lay: Layout, key: bytes) -> tuple[Any, ...]:
    """The flat state a key of ``canonical_source`` names (the orbit's representative)."""
    n, ids, W = cfg.requests, cfg.ids, lay.W
    regs = [f.name for f in FIELDS if f.key == "id" and f.sort == "inst?"]
    others = [f.name for f in FIELDS if f.key == "id" and f.sort != "inst?"]
    scalars = [f.name for f in FIELDS if f.key is None]
    out = [0] * lay.width
    per = W + len(regs)
    for j in range(n):
        chunk = key[j * per : (j + 1) * per]
        out[j * W : j * W + W - 1] = chunk[: W - 1]
        out[lay.pos("rid", j)] = chunk[-1]
    at = n * per
    for g in regs + others:
        for k in range(ids):
            v = key[at]
            out[lay.base[g] + k] = (NONE if v == n else v) if g in regs else v
            at += 1
    for g in scalars:
        out[lay.base[g]] = key[at]
        at += 1
    return tuple(out)


def raw_source(lay: Layout) -> str:
    """Source of ``raw(s) -> bytes``: the state itself, encoded as bytes (every value + 1)."""
    return (
        "def raw(s):\n    return bytes(("
        + ", ".join(f"s[{k}] + 1" for k in range(lay.width))
        + ",))\n"
    )


def key_function(cfg: Config, lay: Layout, symmetry: bool) -> Callable[[tuple[Any, ...]], Any]:
    text = canonical_source(cfg, lay) if symmetry else raw_source(lay)
    ns = compile_source(text, f"<state key: {cfg.label}>")
    return cast(Callable[[tuple[Any, ...]], Any], ns["canon" if symmetry else "raw"])
