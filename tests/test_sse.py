"""The one SSE decoder and encoder (``mcp_inflight.impl.sse``) against the event-stream rules."""

from hypothesis import given
from hypothesis import strategies as st

from mcp_inflight.impl.sse import Decoder, Event, encode, events, messages


def test_fields_comments_and_multiline_data():
    body = (
        b': comment\r\nevent: message\r\nid: 3\r\nretry: 1000\r\ndata: {"a":\r\n'
        b"data:1}\r\n\r\nevent: x\nretry: 1e3\ndata\n\n"
    )
    got = list(events([body]))
    assert got == [Event('{"a":\n1}', "message", "3", 1000), Event("", "x", "3", 1000)]
    assert got[0].json() == {"a": 1}


def test_an_event_without_data_is_not_dispatched_and_a_truncated_one_is_dropped():
    assert list(events([b"id: 1\n\ndata: 1\n"])) == []


def test_a_priming_event_is_dispatched_with_empty_data_and_sets_the_last_id():
    d = Decoder()
    assert d.feed(b"id: s1-0\ndata:\n\n") == [Event("", "message", "s1-0")]
    assert d.last_event_id == "s1-0"
    assert messages(b"id: s1-0\ndata:\n\ndata: [1]\n\n") == [[1]]


def test_an_id_with_nul_is_ignored():
    assert list(events([b"id: a\0b\ndata: 1\n\n"])) == [Event("1")]


def test_encode_rejects_line_breaks():
    for bad in (b"a\nb", b"a\rb"):
        try:
            encode(bad)
        except ValueError:
            continue
        raise AssertionError("accepted a line break in data")


@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.text(), st.integers(-(2**63), 2**63 - 1) | st.text(), max_size=3),
            st.none() | st.text(alphabet=st.characters(blacklist_characters="\r\n\0"), max_size=5),
        ),
        max_size=5,
    ),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.data(),
)
def test_any_split_of_an_encoded_stream_decodes_to_the_same_events(items, eol, data):
    import orjson

    body = b"".join(encode(orjson.dumps(m), id=i) for m, i in items).replace(b"\n", eol)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=6)))
    chunks = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)], strict=True)]
    got = list(events(chunks))
    assert [e.json() for e in got] == [m for m, _ in items]
    last = None
    for (_, i), e in zip(items, got, strict=True):
        last = i if i is not None else last
        assert e.id == last
