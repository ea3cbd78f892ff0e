"""Job options must be declared: a typo fails at decoration with a did-you-mean, plugins
declare their own options, and the app declares the ones its middleware reads."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import cogworker
from cogworker.core.errors import JobDefinitionError, PluginConflictError, PluginLoadError
from cogworker.core.registry import deferred_option_checks

NO_REDIS = "redis://127.0.0.1:1/0"  # never connected to: options are checked offline

TENANT_PLUGIN = """
    import cogworker

    @cogworker.hookimpl
    def cogworker_job_options():
        return [cogworker.JobOption("tenant", "a tenant slug", lambda v: isinstance(v, str))]
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for plugin modules written by a test (unloaded afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("opt_"):
            del sys.modules[name]


def write_module(directory: Path, name: str, source: str) -> str:
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def test_a_misspelt_option_fails_at_decoration_with_the_closest_name() -> None:
    app = cogworker.App(redis_url=NO_REDIS)

    with pytest.raises(JobDefinitionError) as caught:
        @app.job(retries=3)
        def send() -> None: ...

    message = str(caught.value)
    assert "unknown option 'retries'; did you mean 'retry'?" in message
    assert "send" in message
    assert f"{__file__}:" in message  # where the job is defined
    assert ("backtrace, cancel, expires_at, expires_in, limits, queue, retry, time_limit, "
            "unique, unique_args, unique_for") in message


@pytest.mark.parametrize(("options", "expected"), [
    ({"retry": -1}, "option retry=-1 is not valid: retry must be True (25 retries)"),
    ({"backtrace": "yes"}, "option backtrace='yes' is not valid"),
    ({"queue": "two words"}, "option queue='two words' is not valid"),
    ({"unique": "forever"}, "option unique='forever' is not valid: unique must be one of "
                            "until_executed, until_executing, while_executing, or None "
                            "(declared by plugin 'unique')"),
    ({"unique_for": 0}, "unique_for must be a number of seconds > 0"),
    ({"jid": "x"}, "set by cogworker itself"),
])
def test_invalid_values_are_errors_naming_the_declaring_owner(options: dict[str, object],
                                                              expected: str) -> None:
    app = cogworker.App(redis_url=NO_REDIS)
    with pytest.raises(JobDefinitionError, match="job '") as caught:
        app.job(**options)(lambda: None)
    assert expected in str(caught.value)


def test_backtrace_is_a_core_option_stored_in_the_payload() -> None:
    app = cogworker.App(redis_url=NO_REDIS)
    for value in (True, False, 20):
        definition = app.job(name=f"bt{value}", backtrace=value)(lambda: None).definition
        assert definition.options["backtrace"] == value


def test_unique_args_stays_on_the_definition_not_in_the_payload() -> None:
    app = cogworker.App(redis_url=NO_REDIS)

    @app.job(unique="until_executed", unique_args=lambda args: args[:1])
    def sync(account: int, note: str) -> None: ...

    assert "unique_args" not in sync.definition.options
    assert sync.definition.unique_args is not None
    assert sync.definition.unique_args([1, "x"]) == [1]


def test_class_options_and_set_are_checked_too() -> None:
    app = cogworker.App(redis_url=NO_REDIS)

    class Report(cogworker.Job):
        options = {"retrys": 2}

        def perform(self) -> None: ...

    with pytest.raises(JobDefinitionError, match="did you mean 'retry'"):
        app.job(Report)

    @app.job
    def ping() -> None: ...

    with pytest.raises(JobDefinitionError, match="unknown option 'queu'; did you mean 'queue'"):
        ping.set(queu="low")


def test_a_plugin_declares_its_options(plugin_dir: Path) -> None:
    module = write_module(plugin_dir, "opt_tenant", TENANT_PLUGIN)
    app = cogworker.App(redis_url=NO_REDIS, plugins=[f"{module}:"])

    @app.job(tenant="acme")
    def bill() -> None: ...

    assert bill.definition.options["tenant"] == "acme"
    with pytest.raises(JobDefinitionError) as caught:
        app.job(name="other", tenant=3)(lambda: None)
    assert ("tenant=3 is not valid: tenant must be a tenant slug (declared by plugin "
            "'opt_tenant:')") in str(caught.value)


def test_without_the_plugin_its_option_is_unknown(plugin_dir: Path) -> None:
    app = cogworker.App(redis_url=NO_REDIS)
    with pytest.raises(JobDefinitionError, match="unknown option 'tenant'"):
        app.job(tenant="acme")(lambda: None)


def test_a_plugin_deactivated_by_name_keeps_its_options_accepted() -> None:
    app = cogworker.App(redis_url=NO_REDIS, plugins=["no:unique"])

    @app.job(unique="until_executed")
    def sync() -> None: ...

    assert sync.definition.options["unique"] == "until_executed"
    declared = app.job_option_catalog().get("unique")
    assert declared is not None and not declared.active


def test_the_app_declares_the_options_its_middleware_reads() -> None:
    app = cogworker.App(redis_url=NO_REDIS)
    app.declare_job_options("tenant", cogworker.JobOption("priority", "0 to 9",
                                                          lambda v: v in range(10)))

    @app.job(tenant="acme", priority=3)
    def bill() -> None: ...

    assert bill.definition.options == {"tenant": "acme", "priority": 3}
    with pytest.raises(JobDefinitionError, match="priority must be 0 to 9"):
        app.job(name="x", priority=12)(lambda: None)
    with pytest.raises(PluginConflictError, match="'retry' is declared twice, by cogworker"):
        app.declare_job_options("retry")


def test_two_plugins_declaring_one_option_is_an_error_naming_both(plugin_dir: Path) -> None:
    first = write_module(plugin_dir, "opt_one", TENANT_PLUGIN)
    second = write_module(plugin_dir, "opt_two", TENANT_PLUGIN)
    app = cogworker.App(redis_url=NO_REDIS, plugins=[f"{first}:", f"{second}:"])
    with pytest.raises(PluginConflictError, match="'tenant' is declared twice") as caught:
        app.job(tenant="acme")(lambda: None)
    assert "plugin 'opt_one:'" in str(caught.value)
    assert "plugin 'opt_two:'" in str(caught.value)


def test_deferred_checks_wait_for_the_final_plugins(plugin_dir: Path) -> None:
    """What the CLI does: import the app (decorations run), then apply --plugin X."""
    module = write_module(plugin_dir, "opt_late", TENANT_PLUGIN)
    with deferred_option_checks():
        app = cogworker.App(redis_url=NO_REDIS)

        @app.job(tenant="acme")
        def bill() -> None: ...

        with pytest.raises(JobDefinitionError, match="retry=-1"):  # core options: at once
            app.job(name="bad", retry=-1)(lambda: None)
    app.configure(cli={"plugins": [f"{module}:"]})  # checks every job again: fine now

    with deferred_option_checks():
        @app.job(name="typo", tenent="acme")
        def typo() -> None: ...
    with pytest.raises(JobDefinitionError, match="'tenent'; did you mean 'tenant'"):
        app.configure(cli={"plugins": [f"{module}:"]})


def test_a_misspelt_hook_in_a_plugin_gets_a_did_you_mean(plugin_dir: Path) -> None:
    module = write_module(plugin_dir, "opt_beat", """
        import cogworker

        @cogworker.hookimpl
        def cogworker_heartbeet(worker):
            pass
    """)
    app = cogworker.App(redis_url=NO_REDIS, plugins=[f"{module}:"])
    with pytest.raises(PluginLoadError) as caught:
        app.hooks  # noqa: B018
    assert "cogworker_heartbeet: did you mean 'cogworker_heartbeat'?" in str(caught.value)


@pytest.mark.parametrize(("value", "words"), [(object(), "is an object"), (1j, "is a complex")])
def test_argument_errors_use_the_right_article(value: object, words: str) -> None:
    app = cogworker.App(redis_url=NO_REDIS)

    @app.job
    def store(item: object) -> None: ...

    with pytest.raises(cogworker.JobArgumentError, match=f"argument #1 of job '.*' {words} "):
        store.perform_async(value)
