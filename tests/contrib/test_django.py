"""``cogworker.contrib.django`` against the session's real Redis and real databases
(SQLite, and PostgreSQL when installed): when a push happens relative to
``transaction.atomic()``, savepoints included; the settings; the errors.

The scenarios run in one subprocess with the test project set up
(``djangoproject/shop/scenarios.py``); each pushes to a queue of its own that no worker
reads, and reports what was on it at each point, which the tests below check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from contrib.conftest import PROJECT, DjangoSite

Results = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def results(django_site: DjangoSite) -> Results:
    output = django_site.python("-m", "shop.scenarios", *django_site.databases)
    parsed: Results = json.loads(output.strip().splitlines()[-1])
    return parsed


@pytest.fixture(params=["default", "postgres"])
def database(request: pytest.FixtureRequest, django_site: DjangoSite) -> str:
    alias: str = request.param
    if alias not in django_site.databases:
        pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")
    return alias


def outcome(results: Results, name: str, database: str) -> dict[str, Any]:
    return results[f"{name}[{database}]"]


class TestWhenJobsArePushed:
    def test_outside_a_transaction_at_once(self, results: Results, database: str) -> None:
        assert outcome(results, "outside_a_transaction", database) == {
            "after": [["now", database]]}

    def test_inside_atomic_after_the_outermost_commit(self, results: Results,
                                                       database: str) -> None:
        assert outcome(results, "nested_atomic_blocks", database) == {
            "inside": [], "after": [["a", database], ["b", database]]}

    def test_a_rollback_drops_them(self, results: Results, database: str) -> None:
        assert outcome(results, "rollback", database) == {"after": []}

    def test_a_savepoint_rolled_back_drops_only_its_own(self, results: Results,
                                                         database: str) -> None:
        assert outcome(results, "savepoint_rollback", database) == {
            "after": [["outer", database], ["after", database]]}

    def test_another_databases_transaction_does_not_hold_them(self, results: Results,
                                                              django_site: DjangoSite) -> None:
        """on_commit(using=...) names the database whose commit counts."""
        if "postgres" not in django_site.databases:
            pytest.skip("PostgreSQL binaries are not installed (scripts/install-postgres)")
        assert outcome(results, "other_database_in_a_transaction", "postgres") == {
            "inside": [["default is in autocommit", "default"]]}

    def test_perform_on_commit_uses_the_default_database(self, results: Results) -> None:
        observed = outcome(results, "class_job_perform_on_commit", "default")

        assert observed["inside"] == []
        assert observed["after"] == [["class", "default"]]
        assert isinstance(observed["jid"], str)

    def test_a_using_that_is_no_alias_is_refused(self, results: Results) -> None:
        observed = outcome(results, "a_using_that_is_no_alias", "default")

        assert observed["error"] == "TransactionBinderError"
        assert "database alias such as 'default'" in observed["message"]


def test_the_app_comes_from_settings_cogworker(results: Results,
                                              django_site: DjangoSite) -> None:
    assert outcome(results, "the_app_from_settings", "default") == {
        "same": True, "namespace": django_site.namespace, "registered": True}


def test_a_misspelt_setting_names_settings_cogworker(results: Results) -> None:
    observed = outcome(results, "a_misspelt_setting", "default")

    assert observed["error"] == "ConfigurationError"
    assert "'concurency'" in observed["message"]
    assert "from settings.COGWORKER" in observed["message"]


def test_without_an_integration_perform_on_commit_says_what_to_install(
        results: Results) -> None:
    observed = outcome(results, "no_integration_installed", "default")

    assert observed["error"] == "TransactionBinderError"
    assert "'cogworker.contrib.django' to INSTALLED_APPS" in observed["message"]


def test_without_a_settings_module_the_worker_says_what_to_set() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-m", "cogworker", "run", "-A", "cogworker.contrib.django:app"],
        env={**env, "PYTHONPATH": str(PROJECT)}, capture_output=True, text=True, timeout=60,
        check=False,
    )

    assert result.returncode == 2, result.stderr
    assert "DJANGO_SETTINGS_MODULE" in result.stderr
    assert "Traceback" not in result.stderr


def test_importing_cogworker_imports_no_framework() -> None:
    code = ("import sys, cogworker, cogworker.contrib, cogworker.core.transactions; "
            "print(sorted({'django', 'sqlalchemy'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)

    assert result.stdout.strip() == "[]"
