"""model/subscriptions.py: 2026-07-28 ``subscriptions/listen`` and its server-side teardown.

``graceful-response`` holds every property and reaches every witness (explored, and proved at
the default bounds); each mutant breaks what it is declared to break with a shortest trace
(length and last move asserted); the two readings of spec issue #3348 each keep one rule and
break the other; the sensitivity cells are all ``broken (as it must be)``.
"""

from __future__ import annotations

import json

import pytest

from mcp_inflight.model import subscriptions as S
from mcp_inflight.proofs.declared import explore, prove, trace_text

#: design -> property -> (length of the shortest trace, its last action)
TRACES = {
    "cancelled-notification": {"server_end_answers_listen": (2, "teardown")},
    "by-listen-id": {
        "notification_reaches_subscriber": (3, "notify"),
        "server_end_answers_listen": (3, "teardown"),
    },
    "no-unsubscribe": {
        "no_message_after_end": (3, "notify"),
        "registry_dies_with_listen": (2, "ccancel"),
    },
}


def _failing(res):
    return {p.name for p in res.spec.props if res.verdicts[p.name] == "fails"}


def test_the_safe_design_holds_everything_and_reaches_every_witness():
    res = explore(S.spec())
    assert res.spec.design == "graceful-response"
    assert res.ok, res.verdicts
    assert all(v == "holds" for k, v in res.verdicts.items() if k.startswith("aux:"))
    assert all(res.coverage.values()), res.coverage
    assert res.traces["graceful_end"][-1]["action"] == "teardown"
    json.dumps(res.to_json())


def test_the_safe_design_is_proved_at_its_bounds():
    res = prove(S.spec())
    assert res.ok, res.verdicts
    assert not res.dropped


@pytest.mark.parametrize("design", sorted(TRACES))
def test_each_mutant_breaks_what_it_is_declared_to_break(design):
    res = explore(S.spec(design))
    assert _failing(res) == set(TRACES[design])
    for name, (length, last) in TRACES[design].items():
        tr = res.traces[name]
        assert (len(tr), tr[-1]["action"]) == (length, last), trace_text(tr)
        assert tr[0]["action"] == "listen"


def test_routing_by_the_listen_id_sends_one_clients_notification_to_another():
    """Two clients listen under the same id (no sessions on 2026-07-28); the second listen
    takes the id's entry, and the first subscription's notification lands on its stream."""
    tr = explore(S.spec("by-listen-id")).traces["notification_reaches_subscriber"]
    assert [(s["action"], s["args"].get("c")) for s in tr] == [
        ("listen", 0),
        ("listen", 1),
        ("notify", None),
    ]
    assert tr[2]["args"]["x"] == 0 and tr[2]["changes"] == {"got[l1]": ["0", "1"]}


@pytest.mark.parametrize(
    ("design", "kept", "broken"),
    [
        ("graceful-response", "server_end_answers_listen", "cancellation_page_rule"),
        ("cancelled-notification", "cancellation_page_rule", "server_end_answers_listen"),
    ],
)
def test_each_reading_of_3348_keeps_one_rule_and_breaks_the_other(design, kept, broken):
    res = explore(S.with_cancellation_page_rule(S.spec(design)))
    assert res.verdicts[kept] == "holds"
    assert res.verdicts[broken] == "fails"
    tr = res.traces[broken]
    assert [s["action"] for s in tr] == ["listen", "teardown"]


def test_broken_by_covers_every_property():
    safe = S.spec()
    assert set(S.BROKEN_BY) == {p.name for p in safe.props if p.kind in ("always", "step")}
    for prop, designs in S.BROKEN_BY.items():
        for d in designs:
            assert prop in TRACES[d]


def test_the_sensitivity_cells_are_all_broken():
    from mcp_inflight.proofs import sensitivity
    from mcp_inflight.proofs.outcome import Word

    cells = sensitivity.small("subscriptions")
    assert cells and all(c.word is Word.BROKEN for c in cells), [
        (c.prop, c.design, c.word) for c in cells
    ]


def test_the_server_rules_read_no_ghost():
    from mcp_inflight.proofs import discipline

    assert discipline.small(S.spec()).passed
