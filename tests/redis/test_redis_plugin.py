"""The built-in ``redis`` broker plugin: App.broker comes from the hook, like a third party's."""

from __future__ import annotations

import pytest

import cogworker
from cogworker.core.errors import ConfigurationError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.plugin import REDIS_SCHEMES


def test_the_broker_is_built_by_the_redis_plugin() -> None:
    app = cogworker.App(redis_url="redis://:secret@127.0.0.1:1/3", namespace="plugin-test")
    try:
        broker = app.broker
        assert isinstance(broker, RedisBroker)
        assert broker.describe() == "redis://127.0.0.1:1/3"  # no password
        assert broker.keys.queue("default") == "plugin-test:queue:default"
        assert app.hooks.broker_schemes() == {**dict.fromkeys(REDIS_SCHEMES, "redis"),
                                              "": "redis"}
    finally:
        app.close()


def test_a_scheme_no_active_plugin_owns_names_the_brokers() -> None:
    app = cogworker.App(redis_url="http://127.0.0.1:1/0")
    with pytest.raises(ConfigurationError) as caught:
        _ = app.broker
    message = str(caught.value)
    assert "redis_url" in message and "http://..." in message
    assert "(redis: no URL, redis://, redis+cluster://" in message and "unix://)" in message


def test_without_a_broker_plugin_the_error_says_to_activate_one() -> None:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0", plugins=("no:redis",))
    with pytest.raises(ConfigurationError, match="no broker plugin is active"):
        _ = app.broker


def test_a_url_without_a_scheme_is_refused_by_the_settings() -> None:
    with pytest.raises(ConfigurationError, match="a broker URL with a scheme"):
        cogworker.App(redis_url="127.0.0.1:6379")
