"""The limits plugin's checks and read side: decoration-time errors, options,
``cogworker limits`` (list, reset, --json, usage errors) and the Prometheus families."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import cogworker
from cogworker.cli import cli
from cogworker.core.broker import LimiterSpec
from cogworker.core.errors import ConfigurationError, JobDefinitionError
from cogworker.prometheus.serving import fleet_registry
from helpers.cli import Run, command_runner
from plugins.limits.conftest import MakeApp


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def used_limiters(app: cogworker.App) -> None:
    """Three limiters with known usage: a concurrent one with one holder and one
    refusal, a window with two admissions, a bucket with one token taken."""
    limiter = app.limiter
    stripe = limiter.concurrent("stripe", 1, lease=60)
    with stripe:
        with pytest.raises(cogworker.OverLimit, match="'stripe' is full"), stripe:
            pass
        store = limiter.store()
        spec = LimiterSpec("exports", "window", 5, per=3600.0)
        store.register([spec])
        assert store.acquire(spec).admitted and store.acquire(spec).admitted
        with limiter.bucket("mail", rate=1.0, burst=10):
            pass


# decoration ---------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "problem"), [
    (lambda app: app.limiter.concurrent("stripe", 0), "limit must be a whole number >= 1"),
    (lambda app: app.limiter.window("quota", 5, per=-1), "per must be"),
    (lambda app: app.limiter.bucket("mail", rate=0, burst=5), "rate must be"),
    (lambda app: app.limiter.concurrent("", 2), "non-empty name"),
])
def test_a_bad_limit_is_an_error_at_decoration_naming_job_and_limit(
        make_app: MakeApp, limit: object, problem: str) -> None:
    app = make_app()
    with pytest.raises(JobDefinitionError) as caught:
        @app.job(limits=[limit(app)])  # type: ignore[operator]
        def charge() -> None: ...
    message = str(caught.value)
    assert "charge" in message and "limits=" in message and problem in message


def test_limits_must_be_a_list_of_limiter_limits(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(JobDefinitionError, match=r"app\.limiter limits"):
        @app.job(limits=["stripe"])
        def charge() -> None: ...


def test_a_key_that_is_not_a_function_is_refused(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(ValueError, match="key must be a function"):
        app.limiter.concurrent("stripe", 1, key="customer")  # type: ignore[arg-type]


def test_declared_limits_stay_off_the_payload(make_app: MakeApp) -> None:
    app = make_app()

    @app.job(limits=[app.limiter.concurrent("stripe", 2)])
    def charge(amount: int) -> None: ...

    assert "limits" not in charge.definition.options  # what every payload copies
    [limit] = charge.definition.local_options["limits"]
    assert limit.name == "stripe"
    jid = charge.perform_async(5)
    [payload] = [json.loads(raw) for raw in app.broker.queues.page("default", 0, 10)]
    assert payload["jid"] == jid and "limits" not in payload


@pytest.mark.parametrize(("options", "field"), [
    ({"lease": 0}, "plugin_options.limits.lease"),
    ({"max_reschedules": -1}, "plugin_options.limits.max_reschedules"),
    ({"backoff": 10, "max_backoff": 1}, "plugin_options.limits.max_backoff"),
    ({"jitter": "lots"}, "plugin_options.limits.jitter"),
    ({"leese": 3}, "plugin_options.limits.leese"),
])
def test_bad_options_name_the_field(make_app: MakeApp, options: dict[str, object],
                                    field: str) -> None:
    app = make_app(plugin_options={"limits": options})
    with pytest.raises(ConfigurationError, match=field.replace(".", r"\.")):
        app.hooks.configure(app)


def test_a_lease_shorter_than_two_beats_is_refused_when_used(make_app: MakeApp) -> None:
    app = make_app(heartbeat_interval=5.0)
    with pytest.raises(ConfigurationError, match="2 x heartbeat_interval"), \
            app.limiter.concurrent("short", 1, lease=3):
        pass


# cogworker limits ---------------------------------------------------------------------


def test_the_table_lists_each_limiter_with_its_usage(make_app: MakeApp, run: Run) -> None:
    app = make_app()
    used_limiters(app)

    result = run("limits")

    assert result.exit_code == 0, result.output
    header, *rows, total = result.output.splitlines()
    assert header.split()[:4] == ["NAME", "KIND", "USED", "ACQUIRED"]
    by_name = {row.split()[0]: row for row in rows}
    assert set(by_name) == {"exports", "mail", "stripe"}
    assert "0/1" in by_name["stripe"]  # released once the block ended
    assert "2/5" in by_name["exports"]
    assert "9.0/10 tokens" in by_name["mail"] or "9.1/10 tokens" in by_name["mail"]
    assert total == "3 limiters"


def test_json_has_holders_and_counts(make_app: MakeApp, run: Run) -> None:
    app = make_app()
    with app.limiter.concurrent("stripe", 2, lease=60):
        result = run("limits", "--json")
    assert result.exit_code == 0, result.output
    [stripe] = json.loads(result.output)
    assert (stripe["name"], stripe["kind"], stripe["limit"], stripe["used"]) == (
        "stripe", "concurrent", 2, 1)
    [held] = stripe["holders"]
    assert held["identity"] == app.identity and held["jid"] == "-"


def test_reset_empties_a_limiter(make_app: MakeApp, run: Run) -> None:
    app = make_app()
    used_limiters(app)

    result = run("limits", "reset", "exports")

    assert result.exit_code == 0, result.output
    assert "limiter 'exports' reset" in result.output
    assert app.limits.get("exports").used == 0


def test_resetting_an_unknown_limiter_is_a_clear_error(make_app: MakeApp, run: Run) -> None:
    used_limiters(make_app())
    result = run("limits", "reset", "strpe")
    assert result.exit_code == 1
    assert "no limiter named 'strpe' is registered" in result.output
    assert "stripe" in result.output  # the known names


def test_a_usage_error_exits_2(run: Run) -> None:
    assert run("limits", "--jsn").exit_code == 2
    assert run("limits", "reset").exit_code == 2


def test_with_no_limiters_it_says_so(run: Run) -> None:
    result = run("limits")
    assert result.exit_code == 0
    assert "no limiters yet" in result.output


# prometheus ---------------------------------------------------------------------------


def test_the_limiter_families_are_scraped(make_app: MakeApp) -> None:
    app = make_app()
    used_limiters(app)

    text = generate_latest(fleet_registry(app.broker)).decode()

    found = {family.name: family.samples for family in text_string_to_metric_families(text)}

    def value(family: str, sample: str, **labels: str) -> float:
        [match] = [s.value for s in found[family] if s.name == sample
                   and all(s.labels.get(k) == v for k, v in labels.items())]
        return match

    assert value("cogworker_limiter_acquired", "cogworker_limiter_acquired_total",
                 limiter="stripe") == 1
    assert value("cogworker_limiter_over_limit", "cogworker_limiter_over_limit_total",
                 limiter="stripe") == 1
    assert value("cogworker_limiter_acquired", "cogworker_limiter_acquired_total",
                 limiter="exports") == 2
    assert value("cogworker_limiter_in_use", "cogworker_limiter_in_use",
                 limiter="exports", kind="window") == 2
    assert value("cogworker_limiter_limit", "cogworker_limiter_limit",
                 limiter="mail", kind="bucket") == 10
