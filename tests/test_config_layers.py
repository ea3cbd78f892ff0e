"""Converting loosely typed values, queue weights, and merging layers into Settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cogworker.core.config_layers import (
    MAX_QUEUE_WEIGHT,
    Layer,
    format_queues,
    parse_queue_options,
    parse_queues,
    settings_from_layers,
)
from cogworker.core.config_sources import load_settings
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings


def from_strings(**values: str) -> Settings:
    return settings_from_layers([Layer("test-env", values)])


def test_no_layers_gives_defaults() -> None:
    assert settings_from_layers([]) == Settings()


def test_every_field_round_trips_its_default_value() -> None:
    defaults = Settings()
    values = {name: getattr(defaults, name) for name in Settings.field_names()}
    assert settings_from_layers([Layer("code", values)]) == defaults


def test_numbers_from_strings() -> None:
    settings = from_strings(concurrency=" 25 ", timeout="2.5", dead_max_jobs="7", poll_interval="1",
                            push_busy_wait="0")
    assert settings.concurrency == 25
    assert settings.push_busy_wait == 0.0
    assert settings.timeout == 2.5
    assert settings.dead_max_jobs == 7
    assert settings.poll_interval == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("On", True),
        ("false", False),
        ("0", False),
        ("no", False),
        (" off ", False),
    ],
)
def test_booleans_from_strings(text: str, expected: bool) -> None:
    assert from_strings(cluster=text).cluster is expected
    assert from_strings(periodic_catch_up=text).periodic_catch_up is expected


def test_booleans_from_zero_and_one() -> None:
    settings = settings_from_layers([Layer("yaml", {"cluster": 1, "periodic_catch_up": 0})])
    assert (settings.cluster, settings.periodic_catch_up) == (True, False)


@pytest.mark.parametrize(
    ("field", "text", "accepted"),
    [
        ("cluster", "maybe", "true/false, 1/0, yes/no or on/off"),
        ("concurrency", "ten", "an integer from 1 to 1000"),
        ("concurrency", "2.0", "an integer from 1 to 1000"),
        ("timeout", "soon", "seconds >= 0"),
        ("orphan_threshold", "-3", "greater than 0"),
        ("log_level", "loud", "one of DEBUG"),
    ],
)
def test_bad_strings_name_field_value_accepted_and_source(
    field: str, text: str, accepted: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        from_strings(**{field: text})
    message = str(caught.value)
    assert f"setting {field!r}" in message
    assert repr(text) in message
    assert accepted in message
    assert caught.value.source == "test-env"
    assert "(from test-env)" in message


def test_text_fields_are_stripped() -> None:
    settings = from_strings(redis_url=" redis://h:1/0 ", log_level="warning ")
    assert settings.redis_url == "redis://h:1/0"
    assert settings.log_level == "WARNING"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("critical:3,default,low:1", ("critical",) * 3 + ("default", "low")),
        ("default", ("default",)),
        (" a , b:2 ,", ("a", "b", "b")),
        ("app:high", ("app:high",)),
        ("app:high:2", ("app:high", "app:high")),
        (["critical", "critical", "default"], ("critical", "critical", "default")),
        (["critical:2", "low"], ("critical", "critical", "low")),
        ([["critical", 2], ["low", "1"]], ("critical", "critical", "low")),
        ([{"critical": 2}, "low"], ("critical", "critical", "low")),
        ({"critical": 2, "default": 1}, ("critical", "critical", "default")),
        (("a", "b"), ("a", "b")),
    ],
)
def test_queue_forms(value: Any, expected: tuple[str, ...]) -> None:
    assert settings_from_layers([Layer("file", {"queues": value})]).queues == expected


@pytest.mark.parametrize(
    "value",
    [
        "low:0",
        "low:-1",
        f"low:{MAX_QUEUE_WEIGHT + 1}",
        [["low", "x"]],
        [["low", True]],
        ":3",
        {"a": 0},
    ],
)
def test_bad_queue_weights_are_errors(value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers([Layer("queues.yml", {"queues": value})])
    assert caught.value.field == "queues"
    assert caught.value.source == "queues.yml"


@pytest.mark.parametrize("value", [5, [["a", 1, 2]], [3], ""])
def test_unusable_queue_values_are_errors(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="'queues'"):
        settings_from_layers([Layer("file", {"queues": value})])


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("low,3", ("low", "low", "low")),
        ("low", ("low",)),
        ("low, 2", ("low", "low")),
        ("app:high,2", ("app:high", "app:high")),
        ("critical,3,default", ("critical",) * 3 + ("default",)),
        ("critical:3,default,low:1", ("critical",) * 3 + ("default", "low")),
    ],
)
def test_one_queue_grammar_for_every_source(option: str, expected: tuple[str, ...]) -> None:
    """``-q``, ``COGWORKER_QUEUES`` and a config file read the same text the same way."""
    assert parse_queue_options([option]) == expected
    assert from_strings(queues=option).queues == expected
    assert settings_from_layers([Layer("pyproject.toml", {"queues": option})]).queues == expected
    assert settings_from_layers([Layer("pyproject.toml", {"queues": [option]})]).queues == expected


@pytest.mark.parametrize("option", ["low,0", "low,-2", "low,1.5", ",3", "low,3,4", "3",
                                    "low:2,3"])
def test_bad_queue_weights_name_the_option(option: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_queue_options([option])
    assert caught.value.field == "queues"
    assert caught.value.source == "--queue"
    assert repr(option) in str(caught.value)


def test_cogworker_queues_in_the_environment_reads_a_weight() -> None:
    settings = load_settings(environ={"COGWORKER_QUEUES": "critical,3"}, cwd=Path("/"))
    assert settings.queues == ("critical",) * 3
    assert settings.source_of("queues") == "COGWORKER_QUEUES"


def test_a_bare_weight_in_a_list_weights_the_name_before_it() -> None:
    settings = settings_from_layers([Layer("f", {"queues": ["critical", 3, "default"]})])
    assert settings.queues == ("critical",) * 3 + ("default",)


def test_parse_queue_options_keeps_order() -> None:
    assert parse_queue_options(["critical,2", "default"]) == ("critical", "critical", "default")


_QUEUE_NAME = st.text(
    alphabet=st.characters(exclude_characters=","),
    min_size=1,
    max_size=12,
).filter(lambda name: not any(char.isspace() for char in name))


@given(
    st.lists(_QUEUE_NAME, min_size=1, max_size=30).flatmap(
        lambda names: st.lists(st.sampled_from(names), min_size=1, max_size=60)
    )
)
def test_queue_format_parse_round_trip(queues: list[str]) -> None:
    text = format_queues(queues)
    assert parse_queues(text) == tuple(queues)
    assert Settings(queues=parse_queues(text)).queues == tuple(queues)


@pytest.mark.parametrize("queues", [["0E0"], ["1.5", "a"], ["12", "12"], ["x:3"]])
def test_names_that_read_as_numbers_round_trip(queues: list[str]) -> None:
    assert parse_queues(format_queues(queues)) == tuple(queues)


@given(st.lists(st.tuples(_QUEUE_NAME, st.integers(1, MAX_QUEUE_WEIGHT)), min_size=1))
def test_weights_expand_to_repetitions(specs: list[tuple[str, int]]) -> None:
    text = ",".join(f"{name}:{weight}" for name, weight in specs)
    queues = parse_queues(text)
    assert len(queues) == sum(weight for _, weight in specs)
    assert queues[0] == specs[0][0]


def test_format_splits_runs_longer_than_the_maximum_weight() -> None:
    queues = ("a",) * (MAX_QUEUE_WEIGHT + 2)
    assert format_queues(queues) == f"a:{MAX_QUEUE_WEIGHT},a:2"


def test_plugins_from_string_and_list() -> None:
    assert from_strings(plugins="reliable, no:unique,").plugins == ("reliable", "no:unique")
    settings = settings_from_layers([Layer("toml", {"plugins": ["basic", "no:reliable"]})])
    assert settings.plugins == ("basic", "no:reliable")


def test_plugins_append_across_layers_other_fields_replace() -> None:
    settings = settings_from_layers(
        [
            Layer("code", {"plugins": ("unique",), "concurrency": 2}),
            Layer("file", {"plugins": ["periodic-locks"], "concurrency": "3"}),
            Layer("cli", {"plugins": ("no:unique",)}),
        ]
    )
    assert settings.plugins == ("unique", "periodic-locks", "no:unique")
    assert settings.concurrency == 3


def test_bad_plugin_error_names_the_layer_that_gave_it() -> None:
    layers = [
        Layer("file", {"plugins": ["unique"]}),
        Layer("environment", {"plugins": "Bad Name"}, {"plugins": "COGWORKER_PLUGINS"}),
        Layer("command line", {"plugins": ("basic",)}, {"plugins": "--plugin"}),
    ]
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers(layers)
    assert caught.value.value == "Bad Name"
    assert caught.value.source == "COGWORKER_PLUGINS"


def test_plugins_must_be_names() -> None:
    with pytest.raises(ConfigurationError, match="comma-separated string or a list of names"):
        settings_from_layers([Layer("file", {"plugins": [1, 2]})])


def test_plugin_options_from_json_and_merged_per_option() -> None:
    settings = settings_from_layers(
        [
            Layer("file", {"plugin_options": {"unique": {"ttl": 60, "mode": "a"}, "web": {}}}),
            Layer("environment", {"plugin_options": '{"unique": {"ttl": 5}}'}),
        ]
    )
    assert dict(settings.plugin_options["unique"]) == {"ttl": 5, "mode": "a"}
    assert dict(settings.plugin_options["web"]) == {}


def test_plugin_options_bad_json() -> None:
    with pytest.raises(ConfigurationError, match="a JSON object") as caught:
        from_strings(plugin_options="{unique")
    assert caught.value.source == "test-env"


def test_plugin_options_not_a_mapping_of_mappings_is_reported() -> None:
    with pytest.raises(ConfigurationError, match="'plugin_options'"):
        settings_from_layers([Layer("file", {"plugin_options": {"unique": 5}})])


def test_later_layer_wins_and_error_source_is_its_origin() -> None:
    layers = [Layer("code", {"timeout": 1}), Layer("cogworker.toml", {"timeout": 2})]
    assert settings_from_layers(layers).timeout == 2.0
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers([*layers, Layer("env", {"timeout": "-1"}, {"timeout": "X_T"})])
    assert caught.value.source == "X_T"
    assert "(from X_T)" in str(caught.value)


def test_cross_field_error_names_the_source_of_the_field() -> None:
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers([Layer("cogworker.toml", {"heartbeat_ttl": 2})])
    assert caught.value.field == "heartbeat_ttl"
    assert caught.value.source == "cogworker.toml"


def test_unknown_key_names_the_key_suggests_and_lists() -> None:
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers([Layer("cogworker.toml", {"concurency": 5})])
    message = str(caught.value)
    assert caught.value.field == "concurency"
    assert caught.value.source == "cogworker.toml"
    assert "did you mean 'concurrency'?" in message
    assert "heartbeat_interval" in message


def test_unknown_key_without_a_close_match_still_lists_names() -> None:
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers([Layer("file", {"zzz": 1})])
    assert "did you mean" not in str(caught.value)
    assert "valid names are: redis_url" in str(caught.value)


def test_layer_source_of() -> None:
    layer = Layer("environment", {"a": 1}, {"a": "COGWORKER_A"})
    assert layer.source_of("a") == "COGWORKER_A"
    assert layer.source_of("b") == "environment"


def test_plugin_options_shape_error_names_the_layer_that_gave_it() -> None:
    layers = [
        Layer("cogworker.toml", {"plugin_options": {"unique": 5}}),
        Layer("environment", {"plugin_options": '{"web": {}}'}),
    ]
    with pytest.raises(ConfigurationError) as caught:
        settings_from_layers(layers)
    assert caught.value.source == "cogworker.toml"
    assert caught.value.value == {"unique": 5}
