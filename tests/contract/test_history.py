"""``broker.extension(HISTORY)``: append, filters, sorts, paging and trims, on every broker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from cogworker.core.broker import (
    HISTORY,
    Broker,
    DailyCount,
    HistoryQuery,
    HistoryRecord,
    HistoryRetention,
    HistoryStore,
)
from contract.conftest import StoreTime

KEEP = HistoryRetention(max_age=30 * 86400, max_entries=50_000, daily_ttl=400 * 86400)
DAY_MS = 86_400_000


@pytest.fixture
def history(broker: Broker) -> HistoryStore:
    store = broker.extension(HISTORY)
    assert store is not None, f"broker {broker.name} has no history facet"
    return store


def now_ms() -> int:
    return int(time.time() * 1000)


def run(finished_ms: int, *, jid: str | None = None, cls: str = "Mailer", queue: str = "default",
        status: str = "success", duration_us: int = 1000) -> HistoryRecord:
    failed = status == "failed"
    return HistoryRecord(
        run_id=uuid.uuid4().hex[:16], jid=jid or uuid.uuid4().hex[:24], job_class=cls,
        queue=queue, status=status,  # type: ignore[arg-type]
        started_ms=finished_ms - duration_us // 1000, finished_ms=finished_ms,
        duration_us=duration_us, args='[1,"a"]',
        error_class="ValueError" if failed else None, error_message="bad" if failed else None,
        backtrace=("Traceback", "ValueError: bad") if failed else ())


def ids(records: list[HistoryRecord]) -> list[str]:
    return [record.run_id for record in records]


def every_page(store: HistoryStore, query: HistoryQuery, limit: int) -> Iterator[list[str]]:
    cursor: str | None = None
    for _ in range(100):
        page = store.page(query, limit=limit, cursor=cursor, window=3)
        yield ids(page.records)
        cursor = page.cursor
        if cursor is None:
            return
    raise AssertionError("paging never ended")


def test_an_appended_record_reads_back_whole(history: HistoryStore) -> None:
    record = run(now_ms(), status="failed", duration_us=1_234_567)
    history.append([record], KEEP)

    page = history.page(HistoryQuery(), limit=10)

    assert page.records == [record]
    assert page.total == 1
    assert page.cursor is None
    assert page.records[0].duration == pytest.approx(1.234567)


def test_pages_are_newest_first_with_totals_and_offsets(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    records = [run(base + i) for i in range(7)]
    history.append(records, KEEP)
    newest_first = ids(records)[::-1]

    first = history.page(HistoryQuery(), limit=3)
    second = history.page(HistoryQuery(), limit=3, cursor=first.cursor)
    third = history.page(HistoryQuery(), limit=3, cursor=second.cursor)
    by_offset = history.page(HistoryQuery(), limit=3, offset=3)

    assert ids(first.records) + ids(second.records) + ids(third.records) == newest_first
    assert third.cursor is None
    assert first.total == 7
    assert ids(by_offset.records) == newest_first[3:6]
    oldest = history.page(HistoryQuery(descending=False), limit=2)
    assert ids(oldest.records) == ids(records)[:2]


def test_each_filter_is_an_index_read_with_its_total(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    a = run(base + 1, cls="A", queue="q1", status="success")
    b = run(base + 2, cls="B", queue="q1", status="failed")
    c = run(base + 3, cls="A", queue="q2", status="failed", jid="j-1")
    d = run(base + 4, cls="A", queue="q2", status="success", jid="j-1")
    history.append([a, b, c, d], KEEP)

    cases = {HistoryQuery(status="failed"): [c, b], HistoryQuery(job_class="A"): [d, c, a],
             HistoryQuery(queue="q1"): [b, a], HistoryQuery(jid="j-1"): [d, c],
             HistoryQuery(finished_from=base + 2, finished_to=base + 3): [c, b]}
    for query, expected in cases.items():
        page = history.page(query, limit=10)
        assert page.records == expected, query
        assert page.total == len(expected), query
        assert history.count(query) == len(expected), query


def test_a_time_range_narrows_a_filter(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    records = [run(base + i * 10, cls="A") for i in range(5)]
    history.append(records, KEEP)

    page = history.page(HistoryQuery(job_class="A", finished_from=base + 10,
                                     finished_to=base + 30), limit=10)

    assert page.records == records[3:0:-1]
    assert page.total == 3


def test_sorting_by_duration_either_way(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    slow, fast, middle = (run(base + 1, duration_us=9_000_000), run(base + 2, duration_us=5),
                          run(base + 3, duration_us=40_000, cls="Other"))
    history.append([slow, fast, middle], KEEP)

    slowest = history.page(HistoryQuery(sort="duration"), limit=10)
    fastest = history.page(HistoryQuery(sort="duration", descending=False), limit=10)
    class_slowest = history.page(HistoryQuery(sort="duration", job_class="Mailer"), limit=10)

    assert slowest.records == [slow, middle, fast]
    assert fastest.records == [fast, middle, slow]
    assert class_slowest.records == [slow, fast]


def test_a_duration_sort_with_a_time_range_checks_each_record(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    early_slow = run(base + 1, duration_us=9_000)
    late_fast, late_slow = run(base + 50, duration_us=10), run(base + 60, duration_us=500)
    history.append([early_slow, late_fast, late_slow], KEEP)

    page = history.page(HistoryQuery(sort="duration", finished_from=base + 40), limit=10)

    assert page.records == [late_slow, late_fast]


def test_a_combined_filter_pages_by_cursor_over_bounded_windows(
    history: HistoryStore,
) -> None:
    base = now_ms() - 10_000
    records = [run(base + i, cls="A" if i % 2 else "B", status="failed" if i % 3 else "success")
               for i in range(30)]
    history.append(records, KEEP)
    query = HistoryQuery(job_class="A", status="failed")
    expected = [r.run_id for r in reversed(records) if r.job_class == "A" and r.status == "failed"]

    pages = list(every_page(history, query, limit=2))

    assert [run_id for page in pages for run_id in page] == expected
    assert all(len(page) <= 2 for page in pages)
    first = history.page(query, limit=2, window=3)
    assert first.total is None  # two indexes: not counted
    assert first.examined <= 3
    assert history.count(query) is None
    with pytest.raises(ValueError, match="cursor"):
        history.page(query, limit=2, offset=2)


def test_a_jid_timeline_reads_with_another_filter(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    runs = [run(base + i, jid="job-7", status="failed" if i < 2 else "success")
            for i in range(3)]
    history.append([*runs, run(base + 5, status="failed")], KEEP)

    failures = history.page(HistoryQuery(jid="job-7", status="failed"), limit=10)
    timeline = history.page(HistoryQuery(jid="job-7", descending=False), limit=10)

    assert failures.records == runs[1::-1]
    assert failures.total == 2  # the walk saw everything
    assert timeline.records == runs


def test_a_cursor_of_another_query_is_refused(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    history.append([run(base + i, cls="A") for i in range(3)], KEEP)
    cursor = history.page(HistoryQuery(job_class="A"), limit=1).cursor
    assert cursor is not None

    with pytest.raises(ValueError, match="another query"):
        history.page(HistoryQuery(queue="default"), limit=1, cursor=cursor)
    with pytest.raises(ValueError, match="not a history cursor"):
        history.page(HistoryQuery(), limit=1, cursor="garbage")
    with pytest.raises(ValueError, match="1 to"):
        history.page(HistoryQuery(), limit=0)


def test_trims_by_age_remove_a_record_from_every_index(history: HistoryStore) -> None:
    old = run(now_ms() - 31 * DAY_MS, cls="Old", queue="old-q", jid="old-jid", status="failed")
    history.append([old], KEEP)  # trimmed in the same step: it is already too old
    fresh = run(now_ms(), cls="New")
    history.append([fresh], KEEP)

    assert history.page(HistoryQuery(), limit=10).records == [fresh]
    for query in (HistoryQuery(job_class="Old"), HistoryQuery(queue="old-q"),
                  HistoryQuery(jid="old-jid"), HistoryQuery(status="failed"),
                  HistoryQuery(sort="duration", status="failed")):
        assert history.page(query, limit=10).records == [], query
        assert history.count(query) == 0, query


def test_trims_by_count_keep_the_newest_in_every_index(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    records = [run(base + i, cls="A" if i < 3 else "B", duration_us=100 + i) for i in range(6)]
    small = HistoryRetention(max_age=86400, max_entries=4, daily_ttl=86400)
    history.append(records[:3], small)
    history.append(records[3:], small)

    assert ids(history.page(HistoryQuery(), limit=10).records) == ids(records[:1:-1])
    assert history.page(HistoryQuery(job_class="A"), limit=10).records == [records[2]]
    assert history.count(HistoryQuery(job_class="A")) == 1
    by_duration = history.page(HistoryQuery(sort="duration", descending=False), limit=10)
    assert by_duration.records == records[2:]


def test_a_trim_goes_at_most_trim_limit_records_a_step(history: HistoryStore) -> None:
    base = now_ms() - 10_000
    history.append([run(base + i) for i in range(5)], KEEP)
    history.append([run(base + 10)], HistoryRetention(max_age=86400, max_entries=1,
                                                       daily_ttl=86400, trim_limit=2))

    assert history.count(HistoryQuery()) == 4


def test_appending_a_record_again_changes_nothing(history: HistoryStore) -> None:
    record = run(now_ms(), cls="A")
    history.append([record], KEEP)
    history.append([record], KEEP)  # a flush retried after a lost reply

    assert history.page(HistoryQuery(job_class="A"), limit=10).records == [record]
    assert history.count(HistoryQuery()) == 1


def test_daily_counts_bucket_by_utc_day_and_survive_trims(history: HistoryStore) -> None:
    day_ms = DAY_MS * (now_ms() // DAY_MS)  # today's midnight, UTC
    history.append([run(day_ms - 1), run(day_ms + 1), run(day_ms + 2, status="failed")],
                   HistoryRetention(max_age=86400 * 3, max_entries=1, daily_ttl=86400))
    today = time.strftime("%Y-%m-%d", time.gmtime(day_ms / 1000))
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(day_ms / 1000 - 1))

    counts = history.daily_counts([yesterday, today, "2001-01-01"])

    assert counts == {yesterday: DailyCount(1, 0), today: DailyCount(1, 1)}
    assert history.count(HistoryQuery()) == 1  # trimmed to one; the counts stay


def test_daily_counts_expire(history: HistoryStore, store_time: StoreTime) -> None:
    record = run(now_ms())
    day = time.strftime("%Y-%m-%d", time.gmtime(record.finished_at))
    history.append([record], HistoryRetention(max_age=86400, max_entries=10, daily_ttl=0.3))
    assert history.daily_counts([day]) == {day: DailyCount(1, 0)}

    store_time(0.5)

    assert history.daily_counts([day]) == {}


def test_nothing_appended_reads_empty(history: HistoryStore) -> None:
    history.append([], KEEP)

    page = history.page(HistoryQuery(status="failed"), limit=5)
    assert page.records == []
    assert page.cursor is None
    assert page.total == 0


def test_a_duration_sort_with_a_status_filter_walks_the_duration_index(
    history: HistoryStore,
) -> None:
    base = now_ms() - 10_000
    records = [run(base + i, status="failed" if i % 2 else "success", duration_us=1000 + 7 * i)
               for i in range(12)]
    history.append(records, KEEP)
    query = HistoryQuery(sort="duration", status="failed")
    slowest_failed = [r.run_id for r in sorted(records, key=lambda r: -r.duration_us)
                      if r.status == "failed"]

    pages = list(every_page(history, query, limit=4))

    assert [run_id for page in pages for run_id in page] == slowest_failed
    assert history.page(query, limit=4).total == 6  # one filter: still counted
    with pytest.raises(ValueError, match="cursor"):
        history.page(query, limit=4, offset=4)


def test_a_trim_removes_records_whose_values_need_json_escapes(history: HistoryStore) -> None:
    odd = run(now_ms() - 31 * DAY_MS, cls='we\\ird "Job"\n', queue="q\\1", jid='j"1')
    history.append([odd], KEEP)  # trimmed at once: too old

    for query in (HistoryQuery(job_class=odd.job_class), HistoryQuery(queue="q\\1"),
                  HistoryQuery(jid='j"1'), HistoryQuery(sort="duration")):
        assert history.page(query, limit=5).records == [], query
        assert history.count(query) == 0, query
