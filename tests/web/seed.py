"""A fleet's worth of Redis state for the dashboard tests and screenshots.

Everything is written the way cogworker writes it (payload JSON, sorted-set scores,
heartbeat records, cron keys, unique locks), into one test namespace. Some jobs carry
hostile text (``<script>``, an ``onerror`` attribute) in arguments, class names and error
messages: the pages must show them as text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from cogworker.app import App
from cogworker.core.backtrace import compress_backtrace
from cogworker.core.payload import dumps, new_jid
from cogworker.core.periodic_types import PeriodicEntry
from helpers.redis_access import client_of, keys_of

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
HOSTILE = (SCRIPT, IMG)

CLASSES = ("billing.ChargeCard", "mail.SendWelcome", "sync.PullInventory",
           "reports.BuildMonthly")
BACKTRACE = [
    "Traceback (most recent call last):",
    '  File "/srv/app/billing/jobs.py", line 41, in charge_card',
    "    receipt = gateway.charge(customer_id, cents)",
    '  File "/srv/app/billing/gateway.py", line 88, in charge',
    "    raise TimeoutError(f'gateway did not answer in {timeout}s')",
    "TimeoutError: gateway did not answer in 10s",
]


@dataclass
class Seeded:
    """What was written, for the tests to find again."""

    queues: dict[str, list[str]] = field(default_factory=dict)
    retry: list[str] = field(default_factory=list)
    dead: list[str] = field(default_factory=list)
    scheduled: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    cron: list[PeriodicEntry] = field(default_factory=list)
    locks: dict[str, str] = field(default_factory=dict)
    hostile_jid: str = ""
    observed: Any = None
    """What ``web.seed_observed.seed_observed`` wrote (an ``Observed``), when it ran."""


def _job(klass: str, queue: str, args: list[Any], now: float, **extra: Any) -> dict[str, Any]:
    return {"class": klass, "args": args, "queue": queue, "jid": new_jid(), "retry": True,
            "created_at": now, "enqueued_at": now, **extra}


def seed(app: App, now: float | None = None) -> Seeded:
    """Queues, retrying, dead and scheduled jobs, two live processes, throughput, cron
    entries and unique locks."""
    now = time.time() if now is None else now
    client, keys = client_of(app), keys_of(app)
    out = Seeded()
    pipe = client.pipeline(transaction=False)
    for queue, count in (("default", 120), ("mail", 35), ("reports", 4), ("critical", 0)):
        pipe.sadd(keys.queues, queue)
        out.queues[queue] = []
        for index in range(count):
            klass = CLASSES[index % len(CLASSES)]
            job = _job(klass, queue, [1000 + index, {"plan": "pro", "retry": index % 3 == 0}],
                       now - 5 * (count - index))
            out.queues[queue].append(job["jid"])
            pipe.lpush(keys.queue(queue), dumps(job))
    pipe.sadd(keys.paused_queues, "reports")
    hostile = _job(SCRIPT, "mail", [SCRIPT, IMG], now - 2)
    out.hostile_jid = hostile["jid"]
    out.queues["mail"].append(hostile["jid"])
    pipe.lpush(keys.queue("mail"), dumps(hostile))
    for index in range(14):
        job = _job(CLASSES[index % 2], "default", [index, "eu-west"], now - 900,
                   retry_count=index % 4, failed_at=now - 60 * index,
                   error_class="TimeoutError" if index % 2 else "ConnectionResetError",
                   error_message="gateway did not answer in 10s" if index % 2
                   else "[Errno 104] Connection reset by peer",
                   error_backtrace=compress_backtrace(BACKTRACE))
        out.retry.append(job["jid"])
        pipe.zadd(keys.retry, {dumps(job): now + 30 + 97 * index})
    for index in range(9):
        job = _job(CLASSES[(index + 1) % 4], "default", [index], now - 86400,
                   retry_count=25, failed_at=now - 3600 * index,
                   error_class="ValueError", error_message=f"customer {index} has no card")
        out.dead.append(job["jid"])
        pipe.zadd(keys.dead, {dumps(job): now - 3600 * index - 5})
    evil = _job(IMG, "default", [SCRIPT], now - 300, retry_count=25,
                error_class=SCRIPT, error_message=IMG)
    out.dead.append(evil["jid"])
    pipe.zadd(keys.dead, {dumps(evil): now - 1})
    pipe.zadd(keys.dead, {"not a job {": now - 7200})
    for index in range(16):
        job = _job(CLASSES[index % 4], "mail", [index], now)
        out.scheduled.append(job["jid"])
        pipe.zadd(keys.schedule, {dumps(job): now + 600 * (index + 1)})
    pipe.execute()
    _seed_processes(app, now, out)
    _seed_counters(app, now)
    _seed_cron(app, now, out)
    _seed_locks(app, out)
    return out


def _seed_processes(app: App, now: float, out: Seeded) -> None:
    client, keys = client_of(app), keys_of(app)
    for number, (host, queues, concurrency, running) in enumerate(
            (("web-1", ["default", "mail"], 10, 3), ("batch-7", ["reports", "default"], 5, 1))):
        identity = f"{host}:{4100 + number}:{'a1b2c3d4e5f6'[number:] + '0' * number}"
        info = {"hostname": host, "pid": 4100 + number, "concurrency": concurrency,
                "queues": queues, "started_at": now - 3600 * (number + 2) - 123,
                "rss_kb": 81234 + 40000 * number, "identity": identity}
        client.hset(keys.process(identity), mapping={"info": dumps(info), "busy": running,
                                                     "quiet": "false"})
        client.expire(keys.process(identity), 60)
        client.sadd(keys.processes, identity)
        client.hset(keys.last_beat, identity, int(now) - 2 - number)
        for thread in range(running):
            job = _job(CLASSES[thread % 4], queues[0], [thread, "batch"], now - 40)
            out.running.append(job["jid"])
            entry = {"queue": queues[0], "payload": job, "run_at": int(now) - 17 * (thread + 1)}
            client.hset(keys.workers(identity), f"tid-{thread:02d}", dumps(entry))
        out.processes.append(identity)


def _seed_counters(app: App, now: float) -> None:
    client, keys = client_of(app), keys_of(app)
    client.set(keys.stats_processed, 1_284_551)
    client.set(keys.stats_failed, 3_207)
    hour = int(now // 3600)
    pipe = client.pipeline(transaction=False)
    for back in range(24):
        wave = 900 + int(600 * abs(((back * 7) % 24) - 12) / 12)
        pipe.hset(keys.throughput(hour - back), mapping={"processed": wave + 37 * (back % 5),
                                                         "failed": (back * 13) % 40})
    pipe.execute()


def _seed_cron(app: App, now: float, out: Seeded) -> None:
    out.cron = [
        PeriodicEntry("*/5 * * * *", "sync.PullInventory", ["eu"], queue="default"),
        PeriodicEntry("0 2 * * *", "reports.BuildMonthly", [], queue="reports",
                      unique="until_executed"),
        PeriodicEntry("30 9 * * 1-5", "mail.SendDigest", [{"segment": "trial"}], queue="mail"),
    ]
    app.broker.periodic.publish(out.cron, replace=True)
    client, keys = client_of(app), keys_of(app)
    client.set(keys.periodic_last_slot(out.cron[0].pjid), int(now // 300) * 300)
    client.set(keys.periodic_running(out.cron[1].pjid), out.queues["reports"][0], ex=3000)
    client.sadd(keys.periodic_disabled, out.cron[2].pjid)


def _seed_locks(app: App, out: Seeded) -> None:
    client, keys = client_of(app), keys_of(app)
    owners = {"3f2a9c0d1e": out.queues["default"][0], "77b01c9ee2": out.retry[0],
              "c0ffee1234:run": out.running[0], "deadbeef00": new_jid()}
    for digest, owner in owners.items():
        client.set(keys.unique(digest), owner, ex=3600)
        out.locks[keys.unique(digest)] = owner
