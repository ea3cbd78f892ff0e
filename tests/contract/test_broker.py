"""The composite ``Broker``: identity, clock, reach, extensions and ``locate``."""

from __future__ import annotations

import time

import pytest

from cogworker.core.broker import Broker, Extension, Sighting, WorkRecord
from contract.payloads import job

HISTORY = Extension[object]("history", "finished jobs, newest first")


def test_the_broker_names_its_kind(broker: Broker, broker_kind: str) -> None:
    assert broker.name == broker_kind


def test_the_store_clock_is_epoch_seconds(broker: Broker) -> None:
    assert abs(broker.server_time() - time.time()) < 60


def test_the_version_is_numbers_or_none(broker: Broker) -> None:
    version = broker.server_version()

    assert version is None or (version and all(isinstance(n, int) for n in version))


def test_server_info_is_one_flat_mapping(broker: Broker) -> None:
    info = broker.server_info()

    assert info
    assert all(isinstance(value, (str, int, float)) for value in info.values())


def test_describe_names_the_scheme_and_no_secret(broker: Broker, broker_kind: str) -> None:
    target = broker.describe()

    assert target.startswith(f"{broker_kind}://")
    assert "@" not in target


def test_a_reachable_store_answers_a_ping(broker: Broker) -> None:
    assert broker.ping() is True


def test_a_broker_without_extensions_answers_none(broker: Broker) -> None:
    assert broker.extension(HISTORY) is None


def test_close_is_idempotent_and_the_broker_works_on(broker: Broker) -> None:
    broker.close()
    broker.close()

    broker.queues.store([("q", job("q"))], [])
    assert broker.queues.size("q") == 1


def locate_all(broker: Broker, jids: list[str], window: int = 2000) -> dict[str, Sighting]:
    """Every sighting, step by step until the cursor is None."""
    found: dict[str, Sighting] = {}
    cursor, steps = None, 0
    while True:
        missing = [jid for jid in jids if jid not in found]
        page = broker.locate(missing, cursor, window=window)
        found.update(page.found)
        steps += 1
        if page.cursor is None:
            return found
        cursor = page.cursor
        assert steps < 1000


def test_locate_finds_jobs_wherever_they_are(broker: Broker, holder: str) -> None:
    broker.queues.store([("mail", job("mail", jid="j-queued", klass="Mailer")),
                         ("q", job("q", jid="j-held"))], [])
    broker.held.claim(holder, ["q"], 1)
    broker.processes.beat(holder, {}, 1, False, ["q"], 60.0, True)
    broker.processes.set_work(holder, "t1", WorkRecord(
        "q", {"class": "Report", "jid": "j-working", "queue": "q", "args": []}, 1.0))
    now = broker.server_time()
    broker.sets.file("retry", now, job(jid="j-retry"))
    broker.sets.file("schedule", now + 60, job(jid="j-later"))
    broker.sets.file("dead", now, job(jid="j-dead"))

    found = locate_all(broker, ["j-queued", "j-held", "j-working", "j-retry", "j-later",
                                "j-dead", "j-nowhere"])

    assert found == {
        "j-queued": Sighting("queued", "mail", "Mailer"),
        "j-held": Sighting("running", holder, "Work"),
        "j-working": Sighting("running", holder, "Report"),
        "j-retry": Sighting("retrying", "retry", "Work"),
        "j-later": Sighting("scheduled", "schedule", "Work"),
        "j-dead": Sighting("dead", "dead", "Work"),
    }


def test_locate_matches_the_jid_field_only(broker: Broker) -> None:
    broker.queues.store([("q", job("q", jid="j-own", note='{"jid":"j-mentioned"}'))], [])

    assert locate_all(broker, ["j-own", "j-mentioned"]) == {
        "j-own": Sighting("queued", "q", "Work")}


def test_locate_is_bounded_and_goes_on_with_its_cursor(broker: Broker) -> None:
    raws = [job("q", jid=f"j-{n}") for n in range(7)]
    broker.queues.store([("q", raw) for raw in raws], [])

    first = broker.locate(["j-0"], window=2)
    found = locate_all(broker, ["j-0", "j-3"], window=2)

    assert first.found == {} and first.cursor is not None  # j-0 is not in the first window
    assert set(found) == {"j-0", "j-3"}


def test_locate_stops_once_every_jid_was_found(broker: Broker) -> None:
    broker.queues.store([("q", job("q", jid="j-1")), ("q", job("q")), ("q", job("q"))], [])

    page = broker.locate(["j-1"], window=2000)

    assert page == type(page)({"j-1": Sighting("queued", "q", "Work")}, None)


def test_locate_of_no_jid_finds_nothing(broker: Broker) -> None:
    page = broker.locate([])

    assert (dict(page.found), page.cursor) == ({}, None)


def test_locate_refuses_a_bad_cursor_or_window(broker: Broker) -> None:
    with pytest.raises(ValueError):
        broker.locate(["j"], "not a cursor")
    with pytest.raises(ValueError):
        broker.locate(["j"], window=0)
