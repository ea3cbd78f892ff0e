"""The paged, searchable reads the dashboard is built on (``cogworker.api.*_pages``), and the
job actions, against a real Redis."""

from __future__ import annotations

import re
import time

import pytest

from cogworker.api.fleet_pages import fleet_summary, process_page, signal_fleet
from cogworker.api.job_actions import clear_jobs, delete_job, reschedule, retry_now
from cogworker.api.job_lookup import find_job
from cogworker.api.job_pages import job_counts, list_jobs, search_jobs
from cogworker.api.lock_pages import clear_cron_lock, lock_page
from cogworker.api.owner_search import locate
from cogworker.api.queue_pages import queue_page
from cogworker.api.schedule_pages import schedule_page
from cogworker.api.search import search_windows
from cogworker.app import App
from cogworker.core.broker import SearchPage
from cogworker.core.errors import PayloadError
from cogworker.redis.scripts import declared_key_count, script_source
from helpers.redis_access import client_of, keys_of
from web.seed import SCRIPT, Seeded


def test_counts_come_from_every_state(web_app: App, seeded: Seeded) -> None:
    counts = job_counts(web_app)
    assert counts.enqueued == sum(len(jids) for jids in seeded.queues.values())
    assert (counts.running, counts.retrying, counts.scheduled) == (4, 14, 16)
    assert counts.dead == len(seeded.dead) + 1  # and the unreadable burial
    assert counts.total == counts.enqueued + 4 + 14 + 16 + counts.dead


def test_all_view_pages_through_the_states_in_order_without_gaps(web_app: App,
                                                                seeded: Seeded) -> None:
    first = list_jobs(web_app, limit=50)
    seen = [row.jid for row in first.rows]
    offset = 50
    while offset < first.total:  # type: ignore[operator]
        seen += [row.jid for row in list_jobs(web_app, offset=offset, limit=50).rows]
        offset += 50
    assert len(seen) == first.total and len(set(seen)) == len(seen)
    statuses = [row.status for row in list_jobs(web_app, limit=200).rows]
    assert statuses[:4] == ["running"] * 4 and statuses[4] == "enqueued"


def test_enqueued_pages_span_queues_in_both_directions(web_app: App, seeded: Seeded) -> None:
    newest = list_jobs(web_app, status="enqueued", queue="default", limit=3)
    oldest = list_jobs(web_app, status="enqueued", queue="default", limit=3, newest_first=False)
    assert [row.jid for row in newest.rows] == seeded.queues["default"][::-1][:3]
    assert [row.jid for row in oldest.rows] == seeded.queues["default"][:3]
    across = list_jobs(web_app, status="enqueued", offset=118, limit=4)
    assert [row.queue for row in across.rows] == ["default", "default", "mail", "mail"]


def test_sorted_sets_page_by_score(web_app: App, seeded: Seeded) -> None:
    page = list_jobs(web_app, status="retrying", limit=14)
    scores = [row.score for row in page.rows]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert page.rows[0].next_run == page.rows[0].score
    assert page.rows[0].backtrace[-1].startswith("TimeoutError")


def test_search_is_case_insensitive_over_the_stored_job_and_resumes(web_app: App,
                                                                    seeded: Seeded) -> None:
    first = search_jobs(web_app, "TIMEOUTerror", limit=3)
    assert [row.status for row in first.rows] == ["retrying"] * 3
    assert first.total is None and first.next_cursor is not None
    rest = search_jobs(web_app, "timeouterror", cursor=first.next_cursor, limit=100)
    assert len(first.rows) + len(rest.rows) == 7 and rest.next_cursor is None
    assert not {row.jid for row in first.rows} & {row.jid for row in rest.rows}
    hostile = search_jobs(web_app, SCRIPT, status="enqueued")
    assert [row.jid for row in hostile.rows] == [seeded.hostile_jid]


def test_search_stops_at_its_budget_and_hands_back_a_cursor(web_app: App,
                                                           seeded: Seeded) -> None:
    page = search_jobs(web_app, "no such text", status="enqueued", budget=50)
    assert page.rows == [] and page.examined <= 50 + 4000 and page.next_cursor is not None
    queues = web_app.broker.queues

    def step(start: int, limit: int, window: int) -> SearchPage:
        return queues.search("default", "", start=start, limit=limit, window=window)

    scan = search_windows(step, start=0, most=1000, budget=30)
    assert scan.examined == 30 and scan.next_position == 30


def test_find_job_looks_in_every_state(web_app: App, seeded: Seeded) -> None:
    assert find_job(web_app, seeded.running[0]).status == "running"  # type: ignore[union-attr]
    assert find_job(web_app, seeded.queues["mail"][3]).queue == "mail"  # type: ignore[union-attr]
    assert find_job(web_app, seeded.dead[0], "dead").status == "dead"  # type: ignore[union-attr]
    assert find_job(web_app, "nope") is None


def test_actions_change_redis(web_app: App, seeded: Seeded) -> None:
    client, keys = client_of(web_app), keys_of(web_app)
    retrying = find_job(web_app, seeded.retry[0], "retrying")
    assert retrying is not None
    assert reschedule(web_app, "retrying", retrying.jid, 10, score=retrying.score, now=1000.0)
    assert client.zscore(keys.retry, retrying.raw) == 1000.0 + 600
    assert retry_now(web_app, "retrying", retrying.jid)
    assert find_job(web_app, retrying.jid).status == "enqueued"  # type: ignore[union-attr]
    assert not retry_now(web_app, "retrying", retrying.jid)  # already gone
    assert delete_job(web_app, "enqueued", seeded.queues["mail"][0], queue="mail")
    assert client.llen(keys.queue("mail")) == len(seeded.queues["mail"]) - 1
    assert clear_jobs(web_app, "dead") == len(seeded.dead) + 1
    assert client.zcard(keys.dead) == 0
    with pytest.raises(ValueError, match="needs a queue"):
        clear_jobs(web_app, "enqueued")


def test_an_unreadable_burial_cannot_be_retried(web_app: App, seeded: Seeded) -> None:
    burial = next(row for row in list_jobs(web_app, status="dead", limit=50).rows
                  if not row.parsed)
    with pytest.raises(PayloadError):
        retry_now(web_app, "dead", burial.jid, burial.score)
    assert delete_job(web_app, "dead", burial.jid, score=burial.score)


def test_fleet_pages(web_app: App, seeded: Seeded) -> None:
    summary = fleet_summary(web_app)
    assert (summary.processes, summary.threads, summary.busy, summary.quiet) == (2, 15, 4, 0)
    page = process_page(web_app, query="WEB-1", jobs_per_process=2)
    assert [card.process.identity for card in page.cards] == [seeded.processes[0]]
    card = page.cards[0]
    assert card.running == 3 and len(card.jobs) == 2 and card.beat_age is not None
    by_memory = process_page(web_app, sort="memory")
    assert by_memory.cards[0].process.identity == seeded.processes[1]
    pubsub = client_of(web_app).pubsub()  # type: ignore[no-untyped-call, unused-ignore]
    pubsub.subscribe(*(keys_of(web_app).signal(i) for i in seeded.processes))
    deadline = time.monotonic() + 5
    while pubsub.get_message(timeout=0.2) is not None and time.monotonic() < deadline:
        pass  # the subscribe confirmations
    assert signal_fleet(web_app, "quiet") == 2
    messages: list[bytes] = []
    while len(messages) < 2 and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message and message["type"] == "message":
            messages.append(message["data"])
    pubsub.close()
    assert messages == [b"quiet", b"quiet"]


def test_queue_and_schedule_pages(web_app: App, seeded: Seeded) -> None:
    queues = queue_page(web_app, sort="size")
    assert [q.name for q in queues.queues] == ["default", "mail", "reports", "critical"]
    assert queue_page(web_app, query="MAI").total == 1
    schedules = schedule_page(web_app, sort="job")
    assert [e.job for e in schedules.entries] == sorted(e.job_name for e in seeded.cron)
    assert schedules.disabled == 1
    assert schedule_page(web_app, query="trial").total == 1


def test_lock_page_and_whereabouts(web_app: App, seeded: Seeded) -> None:
    page = lock_page(web_app)
    kinds = sorted(lock.kind for lock in page.locks)
    assert kinds == ["cron", "push", "push", "push", "run"]
    # time for the whole search in one call (the default 50 ms runs out on a loaded
    # machine; going on from the cursor is test_locating_goes_on_from_its_cursor's)
    located = locate(web_app, [lock.owner for lock in page.locks], seconds=60)
    assert located.cursor is None
    where = located.found
    assert where[seeded.queues["default"][0]].where == "queued"
    assert where[seeded.retry[0]].where == "retrying"
    orphan = next(lock for lock in page.locks if lock.name == "deadbeef00")
    assert orphan.owner not in where and orphan.orphaned(None)
    narrowed = lock_page(web_app, query="C0FFEE")
    assert [lock.name for lock in narrowed.locks] == ["c0ffee1234:run"]
    cron = next(lock for lock in page.locks if lock.kind == "cron")
    assert clear_cron_lock(web_app, cron.pjid or "")
    assert all(lock.kind != "cron" for lock in lock_page(web_app).locks)


def test_locating_goes_on_from_its_cursor(web_app: App, seeded: Seeded) -> None:
    wanted = [seeded.queues["mail"][-1], seeded.dead[0], seeded.running[0], "nowhere-jid"]
    first = locate(web_app, wanted, seconds=0)  # running jobs, then one window, then stop
    assert set(first.found) == {seeded.running[0]} and first.cursor is not None
    found = dict(first.found)
    cursor: str | None = first.cursor
    while cursor is not None:
        more = locate(web_app, [jid for jid in wanted if jid not in found], cursor, seconds=0)
        found.update(more.found)
        cursor = more.cursor
    assert {jid: seen.where for jid, seen in found.items()} == {
        seeded.queues["mail"][-1]: "queued", seeded.dead[0]: "dead",
        seeded.running[0]: "running"}


def test_lock_page_pages_with_a_cursor(web_app: App, seeded: Seeded) -> None:
    client, keys = client_of(web_app), keys_of(web_app)
    for index in range(120):
        client.set(keys.unique(f"bulk{index:04d}"), f"jid{index}", ex=600)
    seen: set[str] = set()
    cursor = None
    for _ in range(50):
        page = lock_page(web_app, query="bulk", cursor=cursor, limit=25)
        seen |= {lock.name for lock in page.locks}
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == 120


@pytest.mark.parametrize("name", ["search_window", "match_jids"])
def test_api_scripts_declare_what_they_use(name: str) -> None:
    source = script_source("cogworker.redis", name)
    head = "\n".join(line for line in source.splitlines() if line.startswith("--"))
    body = "\n".join(line for line in source.splitlines() if not line.startswith("--"))
    assert "-- luacheck: globals KEYS ARGV redis" in head and "-- Returns" in head
    used_keys = {int(n) for n in re.findall(r"KEYS\[(\d+)\]", body)}
    used_args = {int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)}
    assert used_keys <= set(range(1, declared_key_count(source) + 1))
    assert used_args <= {int(n) for n in re.findall(r"^--\s*ARGV\[(\d+)\]", head, re.M)}
