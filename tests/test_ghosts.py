"""Server rules read only real state: the runtime, which cannot see ghosts, runs the same rules."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_inflight.model import (
    ATOMIC,
    CHECK_THEN_CLAIM,
    FIELDS,
    UNGUARDED,
    Config,
    profiles,
    step,
)

GHOSTS = [f.name for f in FIELDS if f.ghost]


def _real_writes(writes):
    return [(w.field, w.key, w.value) for w in writes if w.when and w.field not in GHOSTS]


@pytest.mark.parametrize("design", [ATOMIC, UNGUARDED, CHECK_THEN_CLAIM], ids=lambda d: d.name)
@given(
    profile=st.sampled_from(profiles()),
    rnd=st.randoms(use_true_random=False),
    flips=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_server_and_wire_actions_ignore_ghosts(design, profile, rnd, flips):
    cfg = Config(design, *profile, ids=2, requests=3)
    b = step.backend(cfg)
    s = step.start(cfg)
    moves = [(m.action, m.r, m.i) for m in step.moves(cfg)]
    for _ in range(40):
        other = s._replace(
            **{g: tuple(x ^ f for x, f in zip(getattr(s, g), flips, strict=False)) for g in GHOSTS}
        )
        for a, r, i in moves:
            if a.side == "client":
                continue
            g1, o1, w1 = a.run(b, s, cfg, r, i)
            g2, o2, w2 = a.run(b, other, cfg, r, i)
            assert g1 == g2, a.name
            if g1:
                assert o1 == o2, a.name
                assert _real_writes(w1) == _real_writes(w2), a.name
        enabled = list(step.successors(cfg, s, b))
        if not enabled:
            break
        s = rnd.choice(enabled).post
