"""The example user project the testing-support tests run through ``pytester``.

``EXAMPLE_APP`` becomes ``example.py`` and ``EXAMPLE_CONFTEST`` its ``conftest.py``. The app
points at port 1 of localhost, where nothing listens: a test in fake or inline mode that
touched Redis would fail. ``cogworker_worker`` repoints it at a real server.
"""

from __future__ import annotations

EXAMPLE_APP = '''
from __future__ import annotations

import asyncio
import threading

import cogworker

app = cogworker.App(redis_url="redis://127.0.0.1:1/0", queues=("default", "mail"),
                    concurrency=3)

log: list[object] = []
client_seen: list[str] = []
server_seen: list[str] = []


def tag_pushes(ctx, call_next):
    ctx.job["traced_by"] = "client-middleware"
    client_seen.append(ctx.job["class"])
    return call_next()


def watch_runs(ctx, call_next):
    server_seen.append(ctx.job["class"])
    return call_next()


app.client_middleware.append(tag_pushes)
app.server_middleware.append(watch_runs)


@app.job(queue="mail")
def send(address):
    log.append(("send", address, threading.current_thread().name))
    return f"sent {address}"


@app.job
def sign_up(address):
    send.perform_async(address)
    return "signed up"


@app.job
def explode(message):
    raise RuntimeError(message)


@app.job
async def fetch(url):
    await asyncio.sleep(0)
    log.append(("fetch", url, threading.current_thread().name))
    return url.upper()


@app.job(unique="until_executed")
def import_feed(feed_id):
    log.append(("import", feed_id))


@app.job(unique_for=60)
def ping(host):
    log.append(("ping", host))


@app.job
class Report(cogworker.Job):
    retry = 2

    def perform(self, account):
        log.append(("report", account, self.jid))
        return account * 2


def flaky_exhausted(job, exc):
    log.append(("exhausted", job["args"], str(exc)))


@app.job(retry=1, retries_exhausted=flaky_exhausted)
def flaky(n):
    raise ConnectionError(f"down {n}")


def picky_retry_in(count, exc, job):
    if isinstance(exc, KeyError):
        return "discard"
    if isinstance(exc, LookupError):
        return "kill"
    return 10 * (count + 1)


@app.job(retry=5, retry_in=picky_retry_in)
def picky(kind):
    errors = {"key": KeyError, "index": IndexError}
    raise errors.get(kind, ValueError)(kind)


@app.job
def forever(n):
    forever.perform_async(n + 1)


@app.job
def nightly():
    log.append(("nightly",))


@app.death_handler
def on_death(job, exc):
    log.append(("died", job["class"], type(exc).__name__))


app.periodic("0 3 * * *", nightly)
app.periodic("*/10 * * * *", import_feed, args=[7], unique="until_executed")
'''

EXAMPLE_CONFTEST = '''
import os

import pytest

import example


@pytest.fixture
def cogworker_app():
    return example.app


@pytest.fixture(autouse=True)
def fresh_lists():
    for items in (example.log, example.client_seen, example.server_seen):
        items.clear()


if os.environ.get("EXAMPLE_REDIS_URL"):
    @pytest.fixture(scope="session")
    def cogworker_redis_url():
        return os.environ["EXAMPLE_REDIS_URL"]
'''
