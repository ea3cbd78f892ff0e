"""Registering cron entries in code and in the config file; entry identity."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

import cogworker
from cogworker.core.errors import PeriodicEntryError
from cogworker.periodic.registration import all_entries, registry_of, replaces_schedule


@pytest.fixture
def offline_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> cogworker.App:
    """An app that never connects: registration needs no Redis."""
    monkeypatch.chdir(tmp_path)
    return cogworker.App(redis_url="redis://127.0.0.1:1/0", namespace="reg")


def test_a_function_a_job_class_and_a_name_can_be_registered(
    offline_app: cogworker.App,
) -> None:
    @offline_app.job(name="reports.cleanup")
    def cleanup(days: int) -> None: ...

    @offline_app.job(name="reports.Digest")
    class Digest(cogworker.Job):
        def perform(self) -> None: ...

    by_function = offline_app.periodic("*/5 * * * *", cleanup, args=[7])
    by_class = offline_app.periodic("0 9 * * mon-fri Europe/Berlin", Digest,
                                    unique="until_executed", queue="reports", retry=3)
    by_name = offline_app.periodic("@hourly", "somewhere.else.job")

    assert (by_function.job_name, by_function.args, by_function.queue) == (
        "reports.cleanup", [7], "default")
    assert (by_class.job_name, by_class.queue, by_class.retry, by_class.until_executed) == (
        "reports.Digest", "reports", 3, True)
    assert by_name.job_name == "somewhere.else.job"
    assert [e.pjid for e in all_entries(offline_app)] == [
        by_function.pjid, by_class.pjid, by_name.pjid]


def test_the_pjid_is_sha1_of_cron_job_and_args_json_and_stable(
    offline_app: cogworker.App,
) -> None:
    entry = offline_app.periodic("*/5 * * * *", "jobs.Sync", args=[1, "é", {"a": None}])
    expected = hashlib.sha1('*/5 * * * *|jobs.Sync|[1,"é",{"a":null}]'.encode()).hexdigest()
    assert entry.pjid == expected
    again = cogworker.App(redis_url="redis://127.0.0.1:1/0").periodic(
        "*/5 * * * *", "jobs.Sync", args=[1, "é", {"a": None}])
    assert again.pjid == expected
    other_args = offline_app.periodic("*/5 * * * *", "jobs.Sync", args=[2])
    assert other_args.pjid != expected
    # queue, retry and unique are not part of the identity (as in the original)
    moved = offline_app.periodic("*/5 * * * *", "jobs.Sync", args=[2], queue="other")
    assert moved.pjid == other_args.pjid


def test_retry_defaults_to_zero_and_a_falsy_retry_is_zero(offline_app: cogworker.App) -> None:
    assert offline_app.periodic("* * * * *", "a.job").retry == 0
    assert offline_app.periodic("* * * * *", "b.job", retry=None).retry == 0
    assert offline_app.periodic("* * * * *", "c.job", retry=False).retry == 0
    assert offline_app.periodic("* * * * *", "d.job", retry=True).retry is True


def test_replace_forgets_earlier_entries_and_asks_for_a_schedule_replace(
    offline_app: cogworker.App,
) -> None:
    offline_app.periodic("* * * * *", "old.job")
    assert not replaces_schedule(offline_app)
    kept = offline_app.periodic("*/2 * * * *", "new.job", replace=True)
    also = offline_app.periodic("*/3 * * * *", "newer.job")
    assert list(registry_of(offline_app).entries) == [kept.pjid, also.pjid]
    assert replaces_schedule(offline_app)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"args": "not-a-list"}, "must be a list"),
        ({"args": [object()]}, "not JSON"),
        ({"unique": "while_executing"}, "not supported for cron entries"),
        ({"queue": ""}, "non-empty queue name"),
        ({"retry": -1}, "retry=-1"),
    ],
)
def test_bad_options_are_errors_naming_the_entry(
    offline_app: cogworker.App, kwargs: dict[str, Any], reason: str,
) -> None:
    with pytest.raises(PeriodicEntryError, match=reason) as caught:
        offline_app.periodic("*/5 * * * *", "jobs.Sync", **kwargs)
    assert "'*/5 * * * *'" in str(caught.value)
    assert "'jobs.Sync'" in str(caught.value)
    assert all_entries(offline_app) == []


def test_an_unregistered_job_class_is_an_error(offline_app: cogworker.App) -> None:
    class Loose(cogworker.Job):
        def perform(self) -> None: ...

    with pytest.raises(PeriodicEntryError, match=r"decorate it with @app\.job"):
        offline_app.periodic("* * * * *", Loose)


def test_config_file_entries_are_read_from_plugin_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cogworker]\nredis_url = "redis://127.0.0.1:1/0"\n\n'
        "[[tool.cogworker.plugin_options.periodic.entries]]\n"
        'cron = "*/10 * * * *"\njob = "maintenance.vacuum"\nargs = ["big"]\n'
        'queue = "maintenance"\nunique = "until_executed"\n\n'
        "[[tool.cogworker.plugin_options.periodic.entries]]\n"
        'cron = "0 3 * * * Europe/Berlin"\njob = "maintenance.backup"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    app = cogworker.App()
    code_entry = app.periodic("* * * * *", "from.code")

    entries = all_entries(app)

    assert [e.job_name for e in entries] == ["from.code", "maintenance.vacuum",
                                             "maintenance.backup"]
    assert entries[0] == code_entry
    vacuum = entries[1]
    assert (vacuum.args, vacuum.queue, vacuum.unique, vacuum.retry) == (
        ["big"], "maintenance", "until_executed", 0)


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        ([{"cron": "* * * * *", "job": "a.b", "quue": "x"}], "unknown field(s) quue"),
        ([{"cron": "* * * * *"}], "needs both cron and job"),
        ([{"cron": "* * 32 * *", "job": "a.b"}], "not a valid cron expression"),
        (["* * * * * a.b"], "must be a table"),
        ("* * * * * a.b", "must be a list"),
    ],
)
def test_invalid_config_entries_are_errors(entries: Any, reason: str) -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0",
                        plugin_options={"periodic": {"entries": entries}})
    with pytest.raises(PeriodicEntryError, match=re.escape(reason)):
        all_entries(app)


def test_args_that_do_not_fit_the_job_are_refused_at_registration(
    offline_app: cogworker.App,
) -> None:
    @offline_app.job(name="reports.cleanup")
    def cleanup(days: int, dry_run: bool = False) -> None: ...

    with pytest.raises(PeriodicEntryError, match=r"reports\.cleanup.*days") as missing:
        offline_app.periodic("*/5 * * * *", cleanup)
    assert "(days, dry_run=False)" in str(missing.value)
    with pytest.raises(PeriodicEntryError, match=r"args=\[1, True, 'x'\]"):
        offline_app.periodic("*/5 * * * *", cleanup, args=[1, True, "x"])
    assert offline_app.periodic("*/5 * * * *", cleanup, args=[1]).args == [1]
    assert [e.args for e in all_entries(offline_app)] == [[1]]  # the refused ones not kept


def test_entries_naming_a_job_registered_later_or_in_the_config_are_checked_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0", plugin_options={
        "periodic": {"entries": [{"cron": "@hourly", "job": "mail.digest", "args": [1, 2]}]}})
    app.periodic("@daily", "mail.digest")  # a name only: the job is not registered yet

    @app.job(name="mail.digest")
    def digest(user_id: int) -> None: ...

    with pytest.raises(PeriodicEntryError, match=r"mail\.digest"):
        all_entries(app)


def test_a_job_name_another_service_registers_is_not_checked(
    offline_app: cogworker.App,
) -> None:
    entry = offline_app.periodic("@hourly", "billing.invoice", args=[1, 2, 3])
    assert [e.args for e in all_entries(offline_app)] == [entry.args]
