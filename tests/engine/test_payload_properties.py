"""Property tests: what a job is given is exactly what it receives."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogworker.core.errors import JobArgumentError, PayloadError
from cogworker.core.payload import (
    check_json_args,
    decode,
    dumps,
    encode,
    max_retries,
    normalize,
    unparseable_wrapper,
)

json_scalars = st.none() | st.booleans() | st.integers() | st.text() | st.floats(
    allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=20,
)


@given(st.lists(json_values, max_size=6))
def test_json_arguments_round_trip_exactly(args: list[Any]) -> None:
    job = normalize({"class": "Job", "args": args})
    assert decode(encode(job))["args"] == args
    assert check_json_args("Job", args) == args


@given(st.lists(json_values, max_size=4), st.integers(min_value=2**63, max_value=2**80))
def test_big_integers_survive(args: list[Any], big: int) -> None:
    job = normalize({"class": "Job", "args": [*args, big]})
    assert decode(encode(job))["args"][-1] == big


@given(st.text())
def test_unicode_is_stored_as_utf8_not_escaped(text: str) -> None:
    raw = dumps({"class": "J", "queue": "q", "args": [text]})
    assert decode(raw)["args"] == [text]
    kept = [ch for ch in text if ord(ch) > 127 and ch.isprintable()
            and not 0xD800 <= ord(ch) <= 0xDFFF]
    assert all(ch in raw for ch in kept)  # written as UTF-8, not as \u escapes


def test_payloads_are_written_without_separator_spaces() -> None:
    # (a text argument may itself hold ", ": so the separators are checked here, not above)
    raw = dumps({"class": "J", "queue": "q", "args": [1, {"a": [2, "é"]}]})
    assert raw == '{"class":"J","queue":"q","args":[1,{"a":[2,"é"]}]}'


non_json = st.one_of(
    st.sets(st.integers(), min_size=1),
    st.tuples(st.integers()),
    st.binary(),
    st.builds(object),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.dictionaries(st.integers(), st.integers(), min_size=1),
)


@given(st.lists(json_values, max_size=3), non_json)
def test_a_non_json_argument_is_named_by_position(good: list[Any], bad: Any) -> None:
    with pytest.raises(JobArgumentError) as info:
        check_json_args("Job", [*good, bad])
    assert f"#{len(good) + 1}" in str(info.value)


@given(st.binary())
@settings(max_examples=200)
def test_any_bytes_either_decode_to_a_job_or_raise_payload_error(raw: bytes) -> None:
    try:
        job = decode(raw)
    except PayloadError as exc:
        wrapper = unparseable_wrapper(raw, "q", exc.reason, 0.0)
        assert decode(dumps(wrapper))["class"] == "(unparseable)"
    else:
        assert isinstance(job, dict) and isinstance(job["queue"], str)


@given(st.one_of(st.none(), st.booleans(), st.integers(-5, 100), st.floats(allow_nan=True),
                 st.text(max_size=5), st.lists(st.integers(), max_size=2)))
def test_retry_budget_is_never_negative(retry: Any) -> None:
    assert max_retries(retry) >= 0


def test_retry_budget_table() -> None:
    values: list[Any] = [None, True, False, 0, 3, 2.9, "7", "x", {}]
    assert [max_retries(v) for v in values] == [
        25, 25, 0, 0, 3, 2, 7, 0, 0]


def test_jid_is_24_lowercase_hex_and_kept_when_given() -> None:
    job = normalize({"class": "J"})
    assert len(job["jid"]) == 24 and job["jid"] == job["jid"].lower()
    int(job["jid"], 16)
    assert normalize({"class": "J", "jid": "abc"})["jid"] == "abc"
    assert json.loads(encode(job))["retry"] is True


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_dumps_writes_what_json_dumps_writes(job: dict[str, Any]) -> None:
    expected = json.dumps(job, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert dumps(job) == expected


def test_dumps_without_the_c_encoder_writes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    job = {"class": "J", "args": [1.5, "é", None, {"k": [True]}], "created_at": 1.25}
    accelerated = dumps(job)
    monkeypatch.setattr("cogworker.core.payload._C_ENCODE", None)
    assert dumps(job) == accelerated
    with pytest.raises(ValueError, match="Out of range float"):
        dumps({"x": math.nan})


def test_dumps_refuses_nan_and_objects_like_json_dumps() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        dumps({"x": [math.inf]})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"x": object()})


_padding = st.sampled_from(["", " ", "\n", "\t ", "x", "]", "{}", " 1"])


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=4), _padding, _padding)
@settings(max_examples=200, deadline=None)  # what is read, not how fast
def test_decode_reads_text_as_the_json_decoder_does(extra: dict[str, Any], before: str,
                                                     after: str) -> None:
    """The scanner shortcut for a bare payload gives what ``json.loads`` gives (NaN refused),
    and anything around it (whitespace, trailing data) is judged by the decoder's own
    path, with its message."""
    text = before + json.dumps({**extra, "class": "C", "queue": "q"}) + after
    try:
        expected: Any = json.loads(text)
    except ValueError as exc:
        message = str(exc)
    else:
        assert decode(text) == expected
        return
    with pytest.raises(PayloadError) as info:
        decode(text)
    assert message in info.value.reason


def test_decode_refuses_nan_and_infinity_where_the_scanner_would_read_them() -> None:
    for text in ('{"class":"C","queue":"q","x":NaN}', '{"class":"C","queue":"q","x":-Infinity}'):
        with pytest.raises(PayloadError, match="is not a JSON number"):
            decode(text)
