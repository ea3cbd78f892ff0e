"""The ``history`` plugin's parts: options, best-effort writes, a broker without the facet."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

import cogworker
from cogworker.core.broker import HistoryRecord, HistoryRetention
from cogworker.core.errors import BrokerUnavailableError, ConfigurationError
from cogworker.core.middleware import JobContext
from cogworker.plugins import history as history_plugin
from cogworker.plugins.history.options import HistoryOptions
from cogworker.plugins.history.recorder import HistoryRecorder, capped_args
from cogworker.testing.memory_broker import MemoryBroker


class FlakyStore:
    """A history store that is away for its first ``failures`` appends."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.written: list[HistoryRecord] = []

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise BrokerUnavailableError("redis is away")
        self.written.extend(records)


def context(job: dict[str, Any]) -> JobContext:
    return JobContext(app=None, job=job, queue="default", raw="{}",  # type: ignore[arg-type]
                      definition=None)


def test_options_default_to_the_documented_values() -> None:
    options = HistoryOptions.parse({})
    assert (options.retention_days, options.max_entries,
            options.daily_stats_retention_days) == (30, 50_000, 400)
    assert options.retention.max_age == 30 * 86400


@pytest.mark.parametrize(("raw", "field"), [
    ({"retention_days": 0}, "retention_days"),
    ({"max_entries": "many"}, "max_entries"),
    ({"max_entries": 1.5}, "max_entries"),
    ({"daily_stats_retention_days": True}, "daily_stats_retention_days"),
    ({"args_max_bytes": 1}, "args_max_bytes"),
    ({"retention": 3}, "retention"),
])
def test_a_bad_option_names_itself_in_full(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"plugin_options\.history\.{field}"):
        HistoryOptions.parse(raw)


def test_a_bad_option_stops_the_app_at_configure() -> None:
    app = cogworker.App(redis_url="memory://history-bad", plugins=("memory", "history"),
                        plugin_options={"history": {"max_entries": 0}})
    with pytest.raises(ConfigurationError, match=r"plugin_options\.history\.max_entries"):
        app.hooks  # noqa: B018 -- loading the plugins runs cogworker_configure


def test_a_failed_write_keeps_the_records_for_the_next_one() -> None:
    store = FlakyStore(failures=1)
    recorder = HistoryRecorder(store, HistoryOptions())  # type: ignore[arg-type]

    # no flush thread: written at once, and that write fails
    recorder.middleware(context({"jid": "j1", "class": "A", "args": []}), lambda: None)

    assert store.written == []
    assert recorder.buffered == 1
    recorder.flush()
    assert [record.jid for record in store.written] == ["j1"]


def test_the_job_result_and_error_pass_through_whatever_the_store_does() -> None:
    recorder = HistoryRecorder(FlakyStore(failures=99), HistoryOptions())  # type: ignore[arg-type]

    assert recorder.middleware(context({"jid": "j1", "class": "A"}), lambda: 42) == 42

    def boom() -> object:
        raise KeyError("the job's own error")

    with pytest.raises(KeyError, match="the job's own error"):
        recorder.middleware(context({"jid": "j2", "class": "A"}), boom)


def test_the_buffer_keeps_at_most_max_buffered_records(caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore(failures=99)
    recorder = HistoryRecorder(store, HistoryOptions(max_buffered=3))  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, "cogworker.history"):
        for n in range(5):
            recorder.middleware(context({"jid": f"j{n}", "class": "A"}), lambda: None)

    assert recorder.buffered == 3
    assert caplog.text.count("dropped so far") == 1  # once, not once per record
    store.failures = 0
    recorder.flush()
    assert [record.jid for record in store.written] == ["j2", "j3", "j4"]


def test_arguments_that_fit_are_kept_whole() -> None:
    assert capped_args([1, "a", {"b": None}], 100) == ('[1,"a",{"b":null}]', False)
    assert capped_args(["abcdef"], 5) == ('["abc', True)


class NoFacetBroker(MemoryBroker):
    def extension(self, key: Any) -> Any:
        return None


def test_a_broker_without_the_facet_is_said_once_and_left_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = cogworker.App(plugins=("history",))
    app.use_broker(NoFacetBroker())

    with caplog.at_level(logging.WARNING, "cogworker.history"):
        first = history_plugin.cogworker_server_middleware(app)
        second = history_plugin.cogworker_server_middleware(app)

    assert first is None and second is None
    assert caplog.text.count("keeps no run history") == 1
    with pytest.raises(cogworker.CogworkerError, match="keeps no run history"):
        _ = app.history


def test_inline_mode_records_each_run_at_once() -> None:
    app = cogworker.App(redis_url="memory://history-inline", plugins=("memory", "history"))
    app.testing.inline()

    @app.job
    def add(a: int, b: int) -> int:
        return a + b

    add.perform_async(1, 2)

    page = app.history.page()
    assert [(record.status, record.args) for record in page.records] == [("success", "[1,2]")]
