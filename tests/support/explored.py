"""Explorer runs shared by every test that asks for the same configuration."""

from functools import cache


@cache
def run(
    design: str,
    revision: str,
    transport: str,
    ids: int = 2,
    requests: int = 2,
    symmetry: bool = True,
    client: str = "reusing",
):
    """One explorer run, shared by every test that asks for it: the one explorer's, as
    ``check`` runs it (``explore(cfg)``: the session's declaration, native where a compiler
    is)."""
    from mcp_inflight.model import DESIGNS, Config
    from mcp_inflight.proofs.explorer import explore

    return explore(
        Config(DESIGNS[design], revision, transport, ids, requests, client),
        symmetry=symmetry,
        progress=False,
    )


@cache
def expanded_flat(cfg, symmetry: bool = True) -> tuple:
    """The states an explorer run of ``cfg`` expands, as flat tuples in the order its
    breadth-first search meets them (the first met of each symmetry key when ``symmetry``), by
    the explorer's own successor function and key; shared by every test that asks for it."""
    from mcp_inflight.proofs.compiled_model import Compiled
    from mcp_inflight.proofs.flat import key_function

    comp = Compiled(cfg)
    key = key_function(cfg, comp.layout, symmetry)
    expand = comp.expand
    s0 = comp.initial()
    seen = {key(s0)}
    order = [s0]
    level = [s0]
    while level:
        nxt = []
        for s in level:
            for _m, t, _outs, _bad in expand(s):
                k = key(t)
                if k not in seen:
                    seen.add(k)
                    nxt.append(t)
        order += nxt
        level = nxt
    return tuple(order)


@cache
def expanded(cfg, symmetry: bool = True) -> tuple:
    """:func:`expanded_flat` as concrete states."""
    from mcp_inflight.proofs.flat import Layout

    lay = Layout(cfg)
    return tuple(lay.unflatten(t) for t in expanded_flat(cfg, symmetry))
