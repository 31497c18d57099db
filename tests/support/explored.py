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
def expanded(cfg, symmetry: bool = True) -> tuple:
    """The states a breadth-first search of ``cfg``'s declaration (``model/session_spec.py``)
    keeps, in the order it meets them, on the one explorer's compiled rules; with ``symmetry``
    one per orbit, the least of its renamings (``proofs/declared_symmetry.py:Canon``), as the
    one explorer keeps them; shared by every test that asks for it.  A state reads as the
    session's (a field per attribute)."""
    from mcp_inflight.model.session_spec import spec
    from mcp_inflight.proofs.compiled_spec import compile_spec
    from mcp_inflight.proofs.declared_symmetry import Canon

    sp = spec(cfg, liveness=False)
    fire = [f for f in compile_spec(sp).fire if f is not None]
    keep = Canon(sp) if symmetry else None
    s0 = sp.initial() if keep is None else keep(sp.initial())
    seen = {s0}
    order = [s0]
    level = [s0]
    while level:
        nxt = []
        for s in level:
            for f in fire:
                t = f(s)
                if t is None:
                    continue
                k = t[0] if keep is None else keep(t[0])
                if k not in seen:
                    seen.add(k)
                    nxt.append(k)
        order += nxt
        level = nxt
    return tuple(order)


def edges(cfg, symmetry: bool = True):
    """Every transition out of the states of :func:`expanded`: ``(pre, action, args, post,
    output)``, the action the session's (``model/session.py``), ``args`` its ``r`` and ``i``,
    ``post`` the successor as the move writes it (not renamed)."""
    from mcp_inflight.model.session import ACTION
    from mcp_inflight.model.session_spec import spec
    from mcp_inflight.proofs.compiled_spec import compile_spec

    sp = spec(cfg, liveness=False)
    fire = [(m, f) for m, f in zip(sp.moves(), compile_spec(sp).fire, strict=True) if f]
    for pre in expanded(cfg, symmetry):
        for m, f in fire:
            t = f(pre)
            if t is not None:
                yield pre, ACTION[m.name], dict(m.args), t[0], t[1]


def judging(cfg, props, symmetry: bool = True, engine: str = "fastest"):
    """The one explorer's run (an ``Explored``) of ``cfg``'s declaration with each of ``props``
    (session properties: ``model/properties.py``'s or ``model/auxiliary.py``'s) judged in place
    of the property of its name, or beside them, whether or not it applies to ``cfg``."""
    from dataclasses import replace

    from mcp_inflight.model.session_spec import declared, spec
    from mcp_inflight.proofs.explorer import explore

    sp = spec(cfg, liveness=False)
    names = {p.name for p in props}
    kept = tuple(p for p in sp.props if p.name not in names)
    aux = tuple(p for p in sp.aux if p.name not in names)
    sp = replace(sp, props=kept + tuple(declared(p, cfg) for p in props), aux=aux)
    return explore(sp, symmetry=symmetry, engine=engine)


def reachable_graph(cfg) -> tuple[frozenset, frozenset]:
    """Every reachable state of ``cfg``'s declaration and every transition, without symmetry
    reduction, walked once on its compiled rules: ``(states, edges)``, each edge ``(pre, action
    name, (r, i), outputs, post)``, the outputs sorted ``(message, (stream, goes out))`` pairs.
    Two designs whose graphs are equal on a profile and bound are the same system there: the
    same states, moves, outputs (where each message is written, or that it is dropped) and runs,
    so every property, safety or liveness, has the same verdict on both."""
    from mcp_inflight.model.session_spec import spec
    from mcp_inflight.proofs.compiled_spec import compile_spec

    sp = spec(cfg, liveness=False)
    c = compile_spec(sp)
    assert c.expand is not None
    named = [(m.name, (m.kw["r"], m.kw.get("i"))) for m in sp.moves()]
    s0 = sp.initial()
    states, todo, found = {s0}, [s0], set()
    while todo:
        pre = todo.pop()
        for k, post, out in c.expand(pre):
            found.add((pre, *named[k], tuple(sorted(out.items())), post))
            if post not in states:
                states.add(post)
                todo.append(post)
    return frozenset(states), frozenset(found)
