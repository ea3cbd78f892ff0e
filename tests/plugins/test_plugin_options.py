"""A built-in's options live under ``plugin_options.<name>``, checked by the plugin, with
the older top-level names kept as aliases."""

from __future__ import annotations

import pytest

import cogworker
from cogworker.core.errors import ConfigurationError
from cogworker.core.plugin_options import AliasedOption, read_plugin_options
from cogworker.core.settings import Settings
from cogworker.fetchers.reliable import idle_max_interval
from cogworker.redis.broker import RedisBroker

NO_REDIS = "redis://127.0.0.1:1/0"
OPTIONS = (AliasedOption("idle_max_interval", alias="fetch_idle_max_interval"),)


def test_the_alias_applies_when_the_plugin_option_is_unset() -> None:
    settings = Settings(fetch_idle_max_interval=2.5)

    assert read_plugin_options(settings, "reliable", OPTIONS) == {"idle_max_interval": 2.5}
    assert read_plugin_options(Settings(), "reliable", OPTIONS) == {"idle_max_interval": 1.0}


def test_the_plugin_option_wins_over_its_alias_and_is_checked_by_the_same_rule() -> None:
    settings = Settings(fetch_idle_max_interval=2.5,
                        plugin_options={"reliable": {"idle_max_interval": 4}})
    assert read_plugin_options(settings, "reliable", OPTIONS) == {"idle_max_interval": 4.0}

    bad = Settings(plugin_options={"reliable": {"idle_max_interval": 0}})
    with pytest.raises(ConfigurationError) as caught:
        read_plugin_options(bad, "reliable", OPTIONS)
    assert caught.value.field == "plugin_options.reliable.idle_max_interval"
    assert "greater than 0" in str(caught.value)


def test_an_undeclared_option_names_the_closest_one() -> None:
    settings = Settings(plugin_options={"reliable": {"idle_max_intervall": 2}})

    with pytest.raises(ConfigurationError, match="did you mean 'idle_max_interval'"):
        read_plugin_options(settings, "reliable", OPTIONS)


def test_a_bad_builtin_option_fails_when_the_plugins_are_configured() -> None:
    app = cogworker.App(redis_url=NO_REDIS, plugin_options={"reliable": {"idle_max_interval": -1}})

    with pytest.raises(ConfigurationError, match=r"plugin_options\.reliable\.idle_max_interval"):
        _ = app.hooks


def test_the_reliable_fetcher_reads_its_option() -> None:
    app = cogworker.App(redis_url=NO_REDIS, plugin_options={"reliable": {"idle_max_interval": 3}})

    assert idle_max_interval(app) == 3.0


def test_the_redis_plugin_reads_cluster_and_push_busy_wait_from_its_options() -> None:
    app = cogworker.App(redis_url=NO_REDIS, namespace="opts", plugin_options={
        "redis": {"cluster": True, "push_busy_wait": 0}})
    try:
        broker = app.broker
        assert isinstance(broker, RedisBroker)
        assert broker.keys.queue("default") == "{opts}:queue:default"
    finally:
        app.close()
    with pytest.raises(ConfigurationError, match=r"plugin_options\.redis\.push_busy_wait"):
        _ = cogworker.App(redis_url=NO_REDIS,
                          plugin_options={"redis": {"push_busy_wait": 1.0}}).hooks
