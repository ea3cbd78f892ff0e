"""Config files (TOML, pyproject, the original's YAML), the environment, and precedence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cogworker.core.config_sources import (
    discover_file,
    env_layer,
    env_var_name,
    expand_environment,
    load_file,
    load_settings,
)
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- TOML -------------------------------------------------------------------------------


def test_cogworker_toml_top_level_table(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cogworker.toml",
        'concurrency = 4\nqueues = [["critical", 2], "default"]\nplugins = ["no:unique"]\n'
        "[plugin_options.unique]\nttl = 30\n",
    )
    layer = load_file(path)
    assert layer.source == str(path)
    assert layer.values["concurrency"] == 4
    settings = load_settings(config_path=path, cwd=tmp_path, environ={})
    assert settings.queues == ("critical", "critical", "default")
    assert settings.plugins == ("no:unique",)
    assert settings.plugin_options["unique"]["ttl"] == 30


def test_pyproject_tool_cogworker_table(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n[tool.cogworker]\ntimeout = 8\nqueues = "a:2,b"\n',
    )
    layer = load_file(path)
    assert layer.source == f"{path} [tool.cogworker]"
    assert dict(layer.values) == {"timeout": 8, "queues": "a:2,b"}


def test_pyproject_without_the_table_is_an_error_when_named(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigurationError, match=r"\[tool.cogworker\] table") as caught:
        load_file(path)
    assert caught.value.field == "config"


def test_invalid_toml_is_reported_with_the_parser_message(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.toml", "concurrency = = 3\n")
    with pytest.raises(ConfigurationError, match="valid TOML") as caught:
        load_file(path)
    assert caught.value.value == str(path)


def test_unknown_key_in_toml_suggests_the_setting(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.toml", "concurency = 4\n")
    with pytest.raises(ConfigurationError, match="did you mean 'concurrency'") as caught:
        load_settings(config_path=path, environ={})
    assert caught.value.source == str(path)


# --- YAML -------------------------------------------------------------------------------


def test_yaml_with_the_original_symbol_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cogworker.yml",
        ":concurrency: 3\n:queues:\n  - critical\n  - critical\n  - [default, 2]\ntimeout: 9\n",
    )
    settings = load_settings(config_path=path, environ={})
    assert settings.concurrency == 3
    assert settings.queues == ("critical", "critical", "default", "default")
    assert settings.timeout == 9.0


def test_yaml_environment_expansion(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cogworker.yaml",
        'redis_url: "${REDIS_HOST_URL}"\nconcurrency: ${THREADS:-7}\n'
        "environment: ${APP_ENV:-development}\nnamespace: ${EMPTY:-fallback}\n"
        "logfile: $${NOT_EXPANDED}\n",
    )
    environ = {"REDIS_HOST_URL": "redis://cache:6379/2", "APP_ENV": "staging", "EMPTY": ""}
    settings = load_settings(config_path=path, environ=environ)
    assert settings.redis_url == "redis://cache:6379/2"
    assert settings.concurrency == 7
    assert settings.environment == "staging"
    assert settings.namespace == "fallback"
    assert settings.logfile == "${NOT_EXPANDED}"


def test_yaml_missing_variable_without_default_names_it(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.yml", "redis_url: ${MISSING_REDIS}\n")
    with pytest.raises(ConfigurationError, match="MISSING_REDIS") as caught:
        load_file(path, environ={})
    assert caught.value.field == "config"
    assert caught.value.source == str(path)
    assert "${MISSING_REDIS:-default}" in str(caught.value)


def test_expand_environment_leaves_plain_dollars_alone() -> None:
    assert expand_environment("a$b $$ ${X}", {"X": "1"}, source="s") == "a$b $$ 1"


@pytest.mark.parametrize(
    ("text", "accepted"),
    [("concurrency: [1\n", "valid YAML"), ("- 1\n- 2\n", "a YAML mapping")],
)
def test_bad_yaml_documents(tmp_path: Path, text: str, accepted: str) -> None:
    path = write(tmp_path / "cogworker.yml", text)
    with pytest.raises(ConfigurationError, match=accepted):
        load_file(path, environ={})


def test_empty_yaml_is_an_empty_layer(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.yml", "# nothing yet\n")
    assert dict(load_file(path, environ={}).values) == {}


def test_yaml_value_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.yml", ":concurrency: 0\n")
    with pytest.raises(ConfigurationError) as caught:
        load_settings(config_path=path, environ={})
    assert caught.value.field == "concurrency"
    assert caught.value.source == str(path)


# --- missing and unsupported files --------------------------------------------------------


def test_missing_explicit_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"existing \.toml, \.yml or \.yaml") as caught:
        load_settings(config_path=tmp_path / "nope.toml", environ={})
    assert caught.value.field == "config"
    assert caught.value.value == str(tmp_path / "nope.toml")


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = write(tmp_path / "cogworker.ini", "[x]\n")
    with pytest.raises(ConfigurationError, match=r"\.toml, \.yml or \.yaml"):
        load_file(path)


# --- discovery ------------------------------------------------------------------------------


def test_discover_prefers_cogworker_toml(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.cogworker]\nconcurrency = 2\n")
    assert discover_file(tmp_path) == tmp_path / "pyproject.toml"
    write(tmp_path / "cogworker.toml", "concurrency = 3\n")
    assert discover_file(tmp_path) == tmp_path / "cogworker.toml"


def test_discover_skips_pyproject_without_table(tmp_path: Path) -> None:
    assert discover_file(tmp_path) is None
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    assert discover_file(tmp_path) is None
    assert load_settings(cwd=tmp_path, environ={}) == Settings()


# --- environment ----------------------------------------------------------------------------


def test_env_layer_reads_every_setting_variable() -> None:
    environ = {
        "COGWORKER_CONCURRENCY": "12",
        "COGWORKER_QUEUES": "critical:2,default",
        "COGWORKER_PLUGINS": "reliable,no:unique",
        "COGWORKER_REDIS_URL": "redis://a:1/0",
        "COGWORKER_CLUSTER": "yes",
        "HOME": "/root",
    }
    layer = env_layer(environ)
    assert layer.source_of("concurrency") == "COGWORKER_CONCURRENCY"
    settings = load_settings(environ=environ, cwd=Path("/nonexistent"))
    assert settings.concurrency == 12
    assert settings.queues == ("critical", "critical", "default")
    assert settings.plugins == ("reliable", "no:unique")
    assert settings.redis_url == "redis://a:1/0"
    assert settings.cluster is True


def test_env_layer_ignores_non_settings_and_empty_values() -> None:
    environ = {
        "COGWORKER_REDIS_SERVER": "/usr/bin/redis-server",
        "COGWORKER_TRACE_PLUGINS": "1",
        "COGWORKER_TEST_REDIS_URL": "redis://x",
        "COGWORKER_CONFIG": "",
        "COGWORKER_TIMEOUT": "",
    }
    assert dict(env_layer(environ).values) == {}


def test_env_unknown_variable_suggests_the_right_one() -> None:
    with pytest.raises(ConfigurationError) as caught:
        env_layer({"COGWORKER_CONCURENCY": "5"})
    assert caught.value.source == "COGWORKER_CONCURENCY"
    assert "did you mean 'COGWORKER_CONCURRENCY'?" in str(caught.value)


def test_plain_redis_url_is_a_fallback_only() -> None:
    assert env_layer({"REDIS_URL": "redis://b:2"}).values["redis_url"] == "redis://b:2"
    assert env_layer({"REDIS_URL": "redis://b:2"}).source_of("redis_url") == "REDIS_URL"
    both = env_layer({"REDIS_URL": "redis://b:2", "COGWORKER_REDIS_URL": "redis://c:3"})
    assert both.values["redis_url"] == "redis://c:3"


def test_env_value_error_names_the_variable() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings(environ={"COGWORKER_CONCURRENCY": "lots"}, cwd=Path("/nonexistent"))
    assert caught.value.source == "COGWORKER_CONCURRENCY"
    assert "'lots'" in str(caught.value)


def test_env_var_name() -> None:
    assert env_var_name("dead_max_jobs") == "COGWORKER_DEAD_MAX_JOBS"


# --- precedence -----------------------------------------------------------------------------


@pytest.fixture
def all_layers(tmp_path: Path) -> dict[str, Any]:
    config = write(tmp_path / "cogworker.toml", 'concurrency = 3\ntimeout = 3\nplugins = ["b"]\n')
    return {
        "code": {"concurrency": 2, "timeout": 2, "namespace": "code", "plugins": ("a",)},
        "config_path": config,
        "environ": {"COGWORKER_CONCURRENCY": "4", "COGWORKER_PLUGINS": "c"},
        "cli": {"concurrency": 5, "plugins": ("no:a",), "logfile": None},
        "cwd": tmp_path,
    }


def test_precedence_across_all_layers(all_layers: dict[str, Any]) -> None:
    settings = load_settings(**all_layers)
    assert settings.concurrency == 5  # CLI
    assert settings.timeout == 3.0  # file beats code; nothing higher sets it
    assert settings.namespace == "code"  # code beats defaults
    assert settings.queues == ("default",)  # default
    assert settings.logfile is None  # None from the CLI means "not given"
    assert settings.plugins == ("a", "b", "c", "no:a")  # appended in precedence order


@pytest.mark.parametrize(
    ("drop", "expected"), [("cli", 4), ("environ", 5), (("cli", "environ"), 3)]
)
def test_each_layer_beats_the_ones_below(
    all_layers: dict[str, Any], drop: str | tuple[str, ...], expected: int
) -> None:
    for name in (drop,) if isinstance(drop, str) else drop:
        all_layers[name] = {}
    assert load_settings(**all_layers).concurrency == expected


def test_code_beats_defaults_when_nothing_else(tmp_path: Path) -> None:
    settings = load_settings(code={"concurrency": 2, "redis_url": None}, cwd=tmp_path, environ={})
    assert settings.concurrency == 2


def test_cli_error_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings(cli={"concurrency": 0}, cwd=tmp_path, environ={})
    assert caught.value.source == "--concurrency"


def test_discovered_file_is_used_and_explicit_path_wins(tmp_path: Path) -> None:
    write(tmp_path / "cogworker.toml", "concurrency = 3\n")
    other = write(tmp_path / "other.yml", ":concurrency: 6\n")
    assert load_settings(cwd=tmp_path, environ={}).concurrency == 3
    assert load_settings(cwd=tmp_path, environ={}, config_path=Path("other.yml")).concurrency == 6
    assert load_settings(cwd=tmp_path, environ={"COGWORKER_CONFIG": str(other)}).concurrency == 6
