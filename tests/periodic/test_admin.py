"""Operating cron entries: the Python API and ``cogworker cron``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from cogworker.app import App
from cogworker.cli.cron_cmd import cron_group
from cogworker.core.errors import UnknownPeriodicEntryError
from cogworker.periodic import admin
from helpers.redis_access import client_of, keys_of
from periodic.conftest import MakeApp, MakeTicker
from periodic.support import START, FakeClock, queued, text


@pytest.fixture
def cli(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)  # no project config file around
    monkeypatch.setenv("COGWORKER_REDIS_URL", redis_url)
    monkeypatch.setenv("COGWORKER_NAMESPACE", namespace)
    return CliRunner()


def test_list_shows_next_run_last_run_state_and_running_owner(
    app: App, make_ticker: MakeTicker, clock: FakeClock,
) -> None:
    exclusive = app.periodic("*/5 * * * *", "jobs.Exclusive", unique="until_executed",
                             args=[1])
    idle = app.periodic("0 9 * * * Europe/Berlin", "jobs.Idle")
    admin.disable(app, idle.pjid)
    make_ticker(app).tick()  # fires the 10:00 slot of the first entry only

    statuses = {status.pjid: status for status in admin.list_entries(app, now=START + 60)}

    running_jid = queued(app)[0]["jid"]
    assert statuses[exclusive.pjid].to_dict() == {
        "pjid": exclusive.pjid, "cron": "*/5 * * * *", "job": "jobs.Exclusive", "args": [1],
        "queue": "default", "retry": 0, "unique": "until_executed",
        "next_run": START + 300, "last_run": int(START), "enabled": True,
        "running_owner": running_jid, "valid": True, "published": False,
    }
    assert statuses[idle.pjid].enabled is False
    assert statuses[idle.pjid].next_run is None
    assert statuses[idle.pjid].last_run is None


def test_published_entries_of_other_apps_are_listed_and_invalid_crons_flagged(
    make_app: MakeApp,
) -> None:
    other = make_app()
    entry = other.periodic("@hourly", "other.Job")
    other.broker.periodic.publish([entry], replace=False)
    client_of(other).hset(keys_of(other).periodic_schedule, "bad",
                             json.dumps({"cron": "99 * * * *", "class": "x", "args": []}))
    client_of(other).hset(keys_of(other).periodic_schedule, "garbage", "not json")
    viewer = make_app()

    statuses = {status.pjid: status for status in admin.list_entries(viewer)}

    assert statuses[entry.pjid].published is True
    assert statuses["bad"].valid is False
    assert statuses["bad"].next_run is None
    assert "garbage" not in statuses


def test_run_now_pushes_an_ordinary_job_and_moves_no_slot(
    app: App, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("0 0 1 1 *", "jobs.Yearly", args=["x"], queue="rare", retry=3,
                         unique="until_executed")

    jid = admin.run_now(app, entry.pjid[:10])

    jobs = queued(app, "rare")
    assert [job["jid"] for job in jobs] == [jid]
    assert {k: jobs[0][k] for k in ("class", "args", "retry", "queue")} == {
        "class": "jobs.Yearly", "args": ["x"], "retry": 3, "queue": "rare"}
    assert not any(key.startswith("periodic_") for key in jobs[0])
    assert not redis_client.exists(keys_of(app).periodic_last_slot(entry.pjid))
    assert not redis_client.exists(keys_of(app).periodic_running(entry.pjid))


def test_entries_are_named_by_pjid_or_a_unique_prefix(app: App) -> None:
    entries = [app.periodic("* * * * *", f"job.N{n}") for n in range(17)]
    by_first_char: dict[str, list[str]] = {}
    for entry in entries:  # 17 pjids, 16 hex digits: two share a first character
        by_first_char.setdefault(entry.pjid[0], []).append(entry.pjid)
    shared = next(char for char, pjids in by_first_char.items() if len(pjids) > 1)

    assert admin.resolve_entry(app, entries[3].pjid)[1] == entries[3]
    assert admin.resolve_entry(app, entries[3].pjid[:20])[0] == entries[3].pjid
    with pytest.raises(UnknownPeriodicEntryError, match="no cron entry has a pjid starting"):
        admin.resolve_entry(app, "zzzz")
    with pytest.raises(UnknownPeriodicEntryError, match=r"matches \d+ cron entries"):
        admin.resolve_entry(app, shared)


def test_disable_and_enable_change_the_fleet_wide_set(
    app: App, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "a.Job")
    assert admin.disable(app, entry.pjid[:6]) == entry.pjid
    assert redis_client.sismember(keys_of(app).periodic_disabled, entry.pjid)
    assert admin.enable(app, entry.pjid) == entry.pjid
    assert not redis_client.sismember(keys_of(app).periodic_disabled, entry.pjid)


# the CLI --------------------------------------------------------------------------------


def published(make_app: MakeApp) -> tuple[App, str]:
    app = make_app()
    entry = app.periodic("*/5 * * * *", "jobs.Report", args=[7])
    app.broker.periodic.publish([entry], replace=False)
    return app, entry.pjid


def test_cron_list_prints_a_table_and_json(cli: CliRunner, make_app: MakeApp) -> None:
    _, pjid = published(make_app)

    table = cli.invoke(cron_group, ["list"])
    as_json = cli.invoke(cron_group, ["list", "--json"])

    assert table.exit_code == 0, table.output
    header, row = table.output.splitlines()
    assert header.split()[:4] == ["ENTRY", "CRON", "JOB", "QUEUE"]
    assert row.startswith(pjid[:12])
    assert "jobs.Report [7]" in row
    assert "never" in row
    assert as_json.exit_code == 0, as_json.output
    assert [item["pjid"] for item in json.loads(as_json.output)] == [pjid]


def test_cron_run_now_disable_and_enable_by_prefix(
    cli: CliRunner, make_app: MakeApp, redis_client: redis.Redis,
) -> None:
    app, pjid = published(make_app)

    ran = cli.invoke(cron_group, ["run-now", pjid[:8]])
    disabled = cli.invoke(cron_group, ["disable", pjid[:8]])
    listed = cli.invoke(cron_group, ["list"])
    enabled = cli.invoke(cron_group, ["enable", pjid])

    assert ran.exit_code == 0, ran.output
    assert ran.output.startswith("enqueued jid=")
    assert queued(app)[0]["jid"] == ran.output.strip().removeprefix("enqueued jid=")
    assert disabled.output.strip() == f"disabled {pjid}"
    assert "disabled" in listed.output.splitlines()[1]
    assert enabled.output.strip() == f"enabled {pjid}"
    assert text(redis_client, keys_of(app).periodic_last_slot(pjid)) is None


@pytest.mark.parametrize("command", ["run-now", "disable", "enable"])
def test_an_unknown_entry_exits_1_with_a_clear_message(
    cli: CliRunner, make_app: MakeApp, command: str,
) -> None:
    published(make_app)
    result = cli.invoke(cron_group, [command, "nope"])
    assert result.exit_code == 1
    assert "no cron entry has a pjid starting with 'nope'" in result.output
