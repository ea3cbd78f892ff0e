"""The Redis fixtures of the pytest plugin, used from a user project."""

from __future__ import annotations

import pytest

from testing.conftest import RunExample

WORKER_TESTS = '''
import redis

import example
from cogworker.api import RetrySet
from example import explode, send, sign_up


def test_the_worker_runs_what_was_pushed(cogworker_worker, cogworker_namespace):
    app = example.app
    assert app.settings.namespace == cogworker_namespace
    sign_up.perform_async("ann")
    send.perform_in(3600, "later")

    assert cogworker_worker.run_until_idle(timeout=10) == 2
    assert [entry[:2] for entry in example.log] == [("send", "ann")]
    assert example.server_seen == ["example.sign_up", "example.send"]


def test_a_failed_job_waits_in_the_retry_set(cogworker_worker):
    explode.perform_async("kaboom")

    assert cogworker_worker.run_until_idle(timeout=10) == 1
    [entry] = list(RetrySet(example.app))
    assert entry.error_message == "kaboom"


def test_each_test_has_its_own_namespace(cogworker_worker, cogworker_redis_url,
                                         cogworker_namespace):
    client = redis.Redis.from_url(cogworker_redis_url)
    try:
        assert list(client.scan_iter(match=f"{cogworker_namespace}:*")) == []
    finally:
        client.close()


def test_the_app_is_configured_back_afterwards(cogworker_app):
    assert cogworker_app.settings.redis_url == "redis://127.0.0.1:1/0"
    assert cogworker_app.settings.namespace == "cogworker"
'''

OWN_SERVER_TESTS = '''

def test_the_sessions_server_wants_the_password_its_url_carries(cogworker_redis_url):
    with_password = redis.Redis.from_url(cogworker_redis_url)
    assert with_password.connection_pool.connection_kwargs["password"]
    assert with_password.ping() is True
    kwargs = with_password.connection_pool.connection_kwargs
    without = redis.Redis(host=kwargs["host"], port=kwargs["port"])
    try:
        without.ping()
    except redis.AuthenticationError:
        pass
    except redis.ResponseError as exc:  # older servers: NOAUTH as a plain error
        assert "NOAUTH" in str(exc)
    else:
        raise AssertionError("the session's server answered a client without its password")
    finally:
        with_password.close()
        without.close()
'''


def test_worker_fixture_on_the_suites_redis(run_example: RunExample, outer_redis: str) -> None:
    result = run_example(WORKER_TESTS)
    result.assert_outcomes(passed=4)


def test_worker_fixture_starts_its_own_redis(run_example: RunExample,
                                             redis_server_binary: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXAMPLE_REDIS_URL", raising=False)
    monkeypatch.setenv("COGWORKER_REDIS_SERVER", redis_server_binary)
    result = run_example(WORKER_TESTS + OWN_SERVER_TESTS)
    result.assert_outcomes(passed=5)


def test_missing_app_fixture_is_explained(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing='''
def test_needs_the_app(cogworker_fake):
    pass
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*define a fixture named cogworker_app in your conftest.py*"])
