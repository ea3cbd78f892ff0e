"""``cogworker.api.History``: the page loop over windows, cursors, times and daily counts."""

from __future__ import annotations

import datetime as dt
import time

import pytest

import cogworker
from cogworker.api import History
from cogworker.core.broker import HISTORY, DailyCount, HistoryRecord, HistoryRetention
from cogworker.testing.memory_broker import MemoryBroker

KEEP = HistoryRetention(max_age=30 * 86400, max_entries=100_000, daily_ttl=400 * 86400)
NOW_MS = int(time.time() * 1000)


def record(n: int, *, cls: str = "A", status: str = "success",
           finished_ms: int | None = None) -> HistoryRecord:
    finished = NOW_MS - 100_000 + n if finished_ms is None else finished_ms
    return HistoryRecord(run_id=f"r{n:06d}", jid=f"j{n}", job_class=cls, queue="default",
                         status=status, started_ms=finished - 1,  # type: ignore[arg-type]
                         finished_ms=finished, duration_us=1000 + n)


@pytest.fixture
def broker() -> MemoryBroker:
    return MemoryBroker()


def fill(broker: MemoryBroker, records: list[HistoryRecord]) -> None:
    store = broker.extension(HISTORY)
    assert store is not None
    store.append(records, KEEP)


def test_a_combined_filter_is_filled_over_several_windows(broker: MemoryBroker) -> None:
    # half are class A, half failed, but both only one in 500: whichever index is walked,
    # a page of 5 needs more than one 1,000-record window
    def shape(n: int) -> HistoryRecord:
        if n % 500 == 0:
            return record(n, cls="A", status="failed")
        return record(n, cls="A") if n % 2 else record(n, cls="B", status="failed")

    fill(broker, [shape(n) for n in range(3000)])

    page = History(broker).page(job_class="A", status="failed", limit=5)

    assert [r.run_id for r in page.records] == ["r002500", "r002000", "r001500", "r001000",
                                                "r000500"]
    assert page.examined > 1000
    assert page.cursor is not None
    rest = History(broker).page(job_class="A", status="failed", limit=10, cursor=page.cursor)
    assert [r.run_id for r in rest.records] == ["r000000"]
    assert rest.cursor is None
    assert rest.total is None  # started from a cursor: what came before is not counted


def test_a_spent_budget_returns_a_short_page_with_a_cursor(broker: MemoryBroker) -> None:
    # the only class A failure is the oldest run: the first window finds nothing
    fill(broker, [record(n, cls="A", status="failed") if n == 0 else
                  record(n, cls="A") if n % 2 else record(n, cls="B", status="failed")
                  for n in range(3000)])

    page = History(broker).page(job_class="A", status="failed", limit=1, budget=0)

    assert page.records == []
    assert page.cursor is not None
    assert page.total is None


def test_times_are_epoch_seconds_or_datetimes(broker: MemoryBroker) -> None:
    fill(broker, [record(n, finished_ms=1_796_083_200_000 + n * 1000) for n in range(5)])
    history = History(broker)
    start = dt.datetime(2026, 12, 1, 0, 0, 1)  # naive: UTC

    by_datetime = history.page(since=start, until=start + dt.timedelta(seconds=2))
    by_seconds = history.page(since=1_796_083_201, until=1_796_083_203.0)

    assert [r.run_id for r in by_datetime.records] == ["r000003", "r000002", "r000001"]
    assert by_seconds.records == by_datetime.records
    assert history.count(since=start) == 4


def test_cursors_are_url_safe_text(broker: MemoryBroker) -> None:
    fill(broker, [record(n) for n in range(5)])

    page = History(broker).page(limit=2)

    assert page.cursor is not None
    assert page.cursor.isascii() and "\x00" not in page.cursor and "=" not in page.cursor
    with pytest.raises(ValueError, match="not a history cursor"):
        History(broker).page(cursor="%%%")


def test_bad_arguments_say_what_is_accepted(broker: MemoryBroker) -> None:
    history = History(broker)
    with pytest.raises(ValueError, match="limit must be 1 to 1000"):
        history.page(limit=1001)
    with pytest.raises(ValueError, match="status must be one of"):
        history.page(status="lost")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sort must be one of"):
        history.page(sort="class")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="days must be 1 to"):
        history.daily_counts(0)


def test_daily_counts_are_the_days_ending_today_oldest_first(broker: MemoryBroker) -> None:
    day = 86_400_000
    today = NOW_MS // day * day
    fill(broker, [record(1, finished_ms=today + 5), record(2, finished_ms=today - day + 5),
                  record(3, status="failed", finished_ms=today - 3 * day)])

    counts = History(broker).daily_counts(3, now=NOW_MS / 1000)

    yesterday = dt.date.fromtimestamp(0) + dt.timedelta(days=today // day - 1)
    assert list(counts) == [yesterday.isoformat(),
                            (yesterday + dt.timedelta(days=1)).isoformat()]
    assert list(counts.values()) == [DailyCount(1, 0), DailyCount(1, 0)]


def test_the_app_reaches_its_broker_history() -> None:
    app = cogworker.App(redis_url="memory://api-history", plugins=("memory",))
    fill(app.broker, [record(1)])  # type: ignore[arg-type]

    assert [r.run_id for r in app.history.timeline("j1")] == ["r000001"]
