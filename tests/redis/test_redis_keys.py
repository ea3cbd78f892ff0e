"""Lock names of the broker contract become keys of the original's layout."""

from __future__ import annotations

import pytest

from cogworker.core.broker import running_lock_name
from cogworker.redis.keys import KeySchema


@pytest.mark.parametrize("keys", [KeySchema(), KeySchema("myapp"), KeySchema("app", cluster=True)],
                         ids=["default", "namespaced", "cluster"])
def test_a_lock_name_maps_to_the_key_its_plugin_used_before(keys: KeySchema) -> None:
    assert keys.lock("unique:3f2a") == keys.unique("3f2a")
    assert keys.lock("unique:3f2a:run") == keys.unique("3f2a:run")
    assert keys.lock(running_lock_name("p1")) == keys.periodic_running("p1")


def test_the_default_namespace_keeps_the_originals_cron_keys() -> None:
    keys = KeySchema()

    assert keys.lock("periodic:running:p1") == "periodic:running:p1"
    assert keys.lock("acme:report") == "cogworker:acme:report"
    assert keys.lock("periodical") == "cogworker:periodical"  # only the periodic: family


def test_every_other_namespace_prefixes_them() -> None:
    assert KeySchema("myapp").lock("periodic:running:p1") == "myapp:periodic:running:p1"
    assert KeySchema("app", cluster=True).lock("acme:x") == "{app}:acme:x"


def test_a_lock_needs_a_name() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        KeySchema().lock("")
