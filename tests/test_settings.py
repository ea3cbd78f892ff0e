"""The Settings object: defaults, validation of every field, normalisation, immutability."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings

# (field, invalid value, the value the message must show, words from the accepted text)
INVALID: list[tuple[str, Any, Any, str]] = [
    ("redis_url", "localhost:6379", "localhost:6379", "a broker URL with a scheme"),
    ("redis_url", "://localhost:6379", "://localhost:6379", "redis+sentinel://"),
    ("redis_url", 6379, 6379, "memory:// with the memory plugin"),
    ("redis_url", "redis://localhost:notaport/0", "redis://localhost:notaport/0",
     "with a port from 1 to 65535"),
    ("redis_url", "redis+sentinel://h1:26379,h2:x/mymaster", "redis+sentinel://h1:26379,h2:x/mymaster",
     "with a port from 1 to 65535"),
    ("namespace", "", "", "non-empty string"),
    ("namespace", "my app", "my app", "without whitespace"),
    ("namespace", "{app}", "{app}", "braces"),
    ("cluster", "yes", "yes", "true or false"),
    ("strict_queue_order", "yes", "yes", "true or false"),
    ("concurrency", 0, 0, "an integer from 1 to 1000"),
    ("concurrency", 1001, 1001, "an integer from 1 to 1000"),
    ("concurrency", True, True, "an integer from 1 to 1000"),
    ("concurrency", 2.5, 2.5, "an integer from 1 to 1000"),
    ("queues", (), (), "at least one queue name"),
    ("queues", ["default"], ["default"], "at least one queue name"),
    ("queues", ("ok", "two words"), "two words", "without whitespace or commas"),
    ("queues", ("a,b",), "a,b", "without whitespace or commas"),
    ("queues", ("",), "", "non-empty"),
    ("fetch", "Reliable", "Reliable", "fetch plugin name made of lowercase letters"),
    ("fetch", "", "", "fetch plugin name"),
    ("fetch_idle_max_interval", 0, 0, "greater than 0"),
    ("fetch_idle_max_interval", math.inf, math.inf, "finite number of seconds"),
    ("push_busy_wait", -1e-6, -1e-6, "from 0 (never busy-wait) to 0.001"),
    ("push_busy_wait", 0.01, 0.01, "from 0 (never busy-wait) to 0.001"),
    ("push_busy_wait", math.nan, math.nan, "number of seconds from 0"),
    ("orphan_threshold", -1.0, -1.0, "greater than 0"),
    ("orphan_threshold", math.nan, math.nan, "greater than 0"),
    ("max_orphanings", 0, 0, "an integer >= 1"),
    ("unique_lock_ttl", 0.0, 0.0, "greater than 0"),
    ("unique_lock_ttl", "86400", "86400", "finite number of seconds"),
    ("periodic_catch_up", 1, 1, "true or false"),
    ("timeout", -0.5, -0.5, "seconds >= 0"),
    ("job_time_limit", -1, -1, "seconds >= 0 (0: no limit)"),
    ("job_time_limit", math.inf, math.inf, "finite number of seconds >= 0"),
    ("time_limit_grace", 0, 0, "greater than 0"),
    ("heartbeat_interval", 0, 0, "greater than 0"),
    ("heartbeat_ttl", 0, 0, "greater than 0"),
    ("heartbeat_ttl", 5.0, 5.0, "greater than heartbeat_interval (5.0)"),
    ("poll_interval", -5, -5, "greater than 0"),
    ("orphan_check_interval", 0, 0, "greater than 0"),
    ("dead_max_jobs", 0, 0, "an integer >= 1"),
    ("dead_timeout", False, False, "greater than 0"),
    ("default_plugins", ("redis", "Unique"), "Unique", "plugin names, each made of"),
    ("plugins", ("reliable", "no:"), "no:", "no:NAME to deactivate"),
    ("plugins", ("Unique",), "Unique", "NAME to activate"),
    ("plugins", ["unique"], ["unique"], "plugin changes"),
    ("log_level", "verbose", "verbose", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ("log_format", "xml", "xml", "text or json"),
    ("logfile", "", "", "a non-empty file path (or leave it unset"),
    ("environment", "", "", "a non-empty name such as production (or leave it unset)"),
    ("cpu_affinity", "0-", "0-", "off, auto, or a list of CPU numbers and low-high ranges"),
    ("cpu_affinity", "a", "a", "such as 0,2 or 0-3,6"),
    ("cpu_affinity", "3-1", "3-1", "low-high ranges"),
    ("cpu_affinity", "", "", "off, auto"),
    ("cpu_affinity", "0,0", "0,0", "each CPU at most once"),
    ("cpu_affinity", 0, 0, "a list of CPU numbers"),
    ("plugin_options", {"unique": 5}, {"unique": 5}, "mapping of plugin name to a mapping"),
    ("plugin_options", [], [], "mapping of plugin name"),
]


@pytest.mark.parametrize(("field", "value", "shown", "accepted"), INVALID)
def test_invalid_value_names_field_value_and_accepted(
    field: str, value: Any, shown: Any, accepted: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings(**{field: value})
    error = caught.value
    assert error.field == field
    assert repr(shown) in str(error)
    assert f"setting {field!r}" in str(error)
    assert accepted in str(error)
    assert error.source is None


def test_every_field_has_an_invalid_case() -> None:
    assert {case[0] for case in INVALID} == set(Settings.field_names())


def test_defaults() -> None:
    settings = Settings()
    assert settings.redis_url is None
    assert settings.namespace == "cogworker"
    assert settings.cluster is False
    assert settings.concurrency == 10
    assert settings.queues == ("default",)
    assert settings.fetch == "reliable"
    assert settings.fetch_idle_max_interval == 1.0
    assert settings.orphan_threshold == 45.0
    assert settings.max_orphanings == 3
    assert settings.unique_lock_ttl == 86400.0
    assert settings.periodic_catch_up is True
    assert settings.timeout == 25.0
    assert (settings.heartbeat_interval, settings.heartbeat_ttl) == (5.0, 20.0)
    assert (settings.poll_interval, settings.orphan_check_interval) == (5.0, 15.0)
    assert (settings.dead_max_jobs, settings.dead_timeout) == (10000, 15552000.0)
    assert settings.plugins == ()
    assert (settings.log_level, settings.log_format) == ("INFO", "text")
    assert (settings.logfile, settings.environment) == (None, None)
    assert settings.cpu_affinity == "off"
    assert dict(settings.plugin_options) == {}


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:6379/0",
        "rediss://user:pw@host:6380",
        "unix:///tmp/redis.sock",
        "redis+sentinel://sentinel-1:26379/mymaster",
    ],
)
def test_redis_url_schemes_accepted(url: str) -> None:
    assert Settings(redis_url=url).redis_url == url


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("concurrency", 1),
        ("concurrency", 1000),
        ("timeout", 0),
        ("namespace", "app:staging"),
        ("fetch", "acme.fetch:fast-v2"),
        ("queues", ("critical", "critical", "default", "app:high")),
        ("plugins", ("reliable", "no:unique", "periodic-locks")),
        ("logfile", "/var/log/cogworker.log"),
        ("environment", "production"),
        ("cluster", True),
        ("strict_queue_order", True),
    ],
)
def test_boundary_and_typical_values_accepted(field: str, value: Any) -> None:
    assert getattr(Settings(**{field: value}), field) == value


def test_log_level_and_format_are_case_insensitive_and_normalised() -> None:
    settings = Settings(log_level="debug", log_format="JSON")
    assert settings.log_level == "DEBUG"
    assert settings.log_format == "json"


def test_integer_seconds_are_stored_as_floats() -> None:
    settings = Settings(timeout=3, orphan_threshold=120)
    assert isinstance(settings.timeout, float)
    assert isinstance(settings.orphan_threshold, float)
    assert settings.timeout == 3.0


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.concurrency = 5  # type: ignore[misc]


def test_plugin_options_are_read_only_at_both_levels() -> None:
    source = {"unique": {"ttl": 60}}
    settings = Settings(plugin_options=source)
    source["unique"]["ttl"] = 1
    assert settings.plugin_options["unique"]["ttl"] == 60
    with pytest.raises(TypeError):
        settings.plugin_options["other"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        settings.plugin_options["unique"]["ttl"] = 5  # type: ignore[index]


def test_replace_returns_a_validated_copy() -> None:
    settings = Settings(concurrency=5)
    changed = settings.replace(concurrency=7, queues=("low",))
    assert (changed.concurrency, changed.queues) == (7, ("low",))
    assert settings.concurrency == 5
    with pytest.raises(ConfigurationError, match="'concurrency' has an invalid value 0"):
        settings.replace(concurrency=0)


def test_replace_with_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings().replace(concurency=5)
    message = str(caught.value)
    assert "'concurency'" in message
    assert "did you mean 'concurrency'?" in message
    assert "orphan_threshold" in message  # the valid names are listed


def test_heartbeat_ttl_must_exceed_interval() -> None:
    assert Settings(heartbeat_interval=10, heartbeat_ttl=11).heartbeat_ttl == 11.0
    with pytest.raises(ConfigurationError, match="greater than heartbeat_interval"):
        Settings(heartbeat_interval=60)


def test_field_names_in_declaration_order() -> None:
    names = Settings.field_names()
    assert names[:4] == ("redis_url", "namespace", "cluster", "concurrency")
    assert names[-1] == "plugin_options"
    assert len(names) == 30


def test_equal_settings_compare_equal() -> None:
    assert Settings(plugin_options={"a": {"b": 1}}) == Settings(plugin_options={"a": {"b": 1}})
    assert Settings(concurrency=3) != Settings()


def test_reference_docs_list_every_setting_and_env_var() -> None:
    docs = Path(__file__).parent.parent / "docs" / "reference" / "settings.md"
    text = docs.read_text(encoding="utf-8")
    for name in Settings.field_names():
        assert f"| `{name}` |" in text
        assert f"`COGWORKER_{name.upper()}`" in text
