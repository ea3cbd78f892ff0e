"""``plain_jid``: the ack path reads a payload's jid without parsing it, or says it cannot.

Whenever it answers, the answer must be the parsed payload's (:func:`parse_job`): the orphan
counter an ack drops must be the one recovery counted.
"""

from __future__ import annotations

import pytest

from cogworker.core.payload import encode
from cogworker.redis.keys import KeySchema
from cogworker.redis.requeue_keys import (
    counter_key,
    parse_job,
    plain_jid,
    settled_counter_key,
)

KEYS = KeySchema("plain-jid")


def test_a_payload_as_cogworker_writes_it_is_read_without_parsing() -> None:
    raw = encode({"class": "Report", "args": [1, {"jid": "nested"}], "jid": "abc123",
                  "queue": "low", "created_at": 1.5})

    # a nested "jid" after the real one: not certain, so it parses
    assert plain_jid(raw) is None
    assert settled_counter_key(KEYS, raw) == counter_key(KEYS, raw) == KEYS.orphanings("abc123")

    simple = encode({"class": "Report", "jid": "abc123", "args": [1, "x"], "queue": "low"})
    assert plain_jid(simple) == "abc123"
    assert settled_counter_key(KEYS, simple) == KEYS.orphanings("abc123")


@pytest.mark.parametrize("raw", [
    '{"class":"A","args":[{"jid":"inner"}],"jid":"outer"}',  # nested before the real one
    '{"class":"A{","jid":"j"}',  # a brace inside an earlier string
    '{"ab\\"jid":"evil"}',  # a key that ends in an escaped quote and jid
    '{"ab\\"jid":"evil","jid":"real"}',
    '{"jid":"first","jid":"last"}',  # a duplicate key: the parser keeps the last
    '{"jid":"first","jid" : "last"}',
    '{"jid":"a\\u0062c"}',  # an escape in the value
    '{"jid":""}',  # an empty jid is no jid
    '{"jid": "spaced"}',  # not the compact form
    '{"jid":12}',
    '[{"jid":"in-a-list"}]',
    ' {"jid":"leading-space"}',
    '{"args":["{"],"jid":"j"}',
])
def test_whatever_it_answers_is_the_parsers_answer(raw: str) -> None:
    assert parse_job(raw) is not None or raw.startswith("[")
    answer = plain_jid(raw)
    job = parse_job(raw)
    parsed = job.get("jid") if job is not None else None
    if answer is not None:
        assert answer == parsed
    assert settled_counter_key(KEYS, raw) == counter_key(KEYS, raw)


def test_what_it_cannot_be_sure_of_it_leaves_to_the_parser() -> None:
    assert plain_jid('{"class":"A{","jid":"j"}') is None
    assert plain_jid('{"ab\\"jid":"evil"}') is None
    assert plain_jid('{"jid":"first","jid":"last"}') is None
    assert plain_jid('{"jid":"a\\u0062c"}') is None
