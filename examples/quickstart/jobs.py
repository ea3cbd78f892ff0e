"""The example app: four jobs that show what a worker does.

Run it end to end with ``scripts/example`` (or see ``run.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

import cogworker

# No redis_url: cogworker starts (or reuses) a private redis-server under .cogworker/.
# Short intervals so the demo's scheduled job and retry show up within seconds.
app = cogworker.App(
    namespace=os.environ.get("EXAMPLE_NAMESPACE", "quickstart"),
    concurrency=4,
    poll_interval=1.0,
)
log = logging.getLogger("examples.quickstart")
attempts: dict[str, int] = {}


@app.job(queue="default")
def greet(name: str) -> None:
    """Succeeds at once."""
    log.info("hello, %s!", name)


def retry_quickly(count: int, exc: BaseException) -> float:
    return 1.0  # seconds; the default backoff would wait 16-74 s for a first retry


@app.job(queue="default", retry=3, retry_in=retry_quickly)
def flaky(order_id: int) -> None:
    """Fails on its first attempt, then succeeds when retried."""
    key = str(order_id)
    attempts[key] = attempts.get(key, 0) + 1
    if attempts[key] == 1:
        raise ConnectionError(f"payment service timed out for order {order_id}")
    log.info("order %s charged on attempt %d", order_id, attempts[key])


@app.job(queue="default")
def reminder(text: str, enqueued_at: float) -> None:
    """Scheduled a few seconds ahead."""
    log.info("reminder %r ran %.1f s after it was scheduled", text, time.time() - enqueued_at)


@app.job(queue="default")
async def fetch_report(report_id: int) -> None:
    """An async job, run on the worker's event loop."""
    await asyncio.sleep(0.2)
    log.info("report %d fetched asynchronously", report_id)
