"""The error_backtrace codec: Sidekiq 7's compressed form written, both forms read."""

from __future__ import annotations

import base64
import json
import zlib

from cogworker.core.backtrace import (
    MAX_LINE_CHARS,
    backtrace_lines,
    compress_backtrace,
    exception_lines,
)


def _raise_key_error() -> None:
    data: dict[str, int] = {}
    data["missing"]  # the line the backtrace must name


def test_exception_lines_name_the_failing_line_innermost_last() -> None:
    try:
        _raise_key_error()
    except KeyError as exc:
        lines = exception_lines(exc)
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "KeyError: 'missing'"
    assert any('data["missing"]' in line for line in lines)


def test_exception_lines_keep_the_last_lines_and_cut_long_ones() -> None:
    try:
        raise ValueError("x" * 5000)
    except ValueError as exc:
        lines = exception_lines(exc, limit=2)
        none = exception_lines(exc, limit=0)
    assert len(lines) == 2
    assert lines[-1].startswith("ValueError: xxx")
    assert len(lines[-1]) == MAX_LINE_CHARS
    assert none == []


def test_compressed_form_is_sidekiq_7s_and_round_trips() -> None:
    lines = ["Traceback (most recent call last):", '  File "jobs.py", line 3', "Käse: ü"]
    stored = compress_backtrace(lines)
    assert json.loads(zlib.decompress(base64.b64decode(stored))) == lines
    assert backtrace_lines(stored) == lines


def test_plain_lists_of_older_sidekiq_are_read() -> None:
    assert backtrace_lines(["a.rb:1", "b.rb:2"]) == ["a.rb:1", "b.rb:2"]


def test_unreadable_values_give_no_lines() -> None:
    not_a_list = base64.b64encode(zlib.compress(b'{"a":1}')).decode()
    bomb = base64.b64encode(zlib.compress(b"[" + b'"x",' * 400_000 + b'"x"]')).decode()
    for value in (None, "", "not base64!", base64.b64encode(b"not zlib").decode(),
                  not_a_list, bomb, 42):
        assert backtrace_lines(value) == []
