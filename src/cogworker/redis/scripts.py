"""Loads the ``.lua`` files and runs them with EVALSHA (NOSCRIPT falls back to a load).

Each script sits next to the Python module that owns it, in a ``lua/`` folder of that
package (``cogworker.redis``, ``cogworker.fetchers``, ``cogworker.plugins``, or a third
party's package), one operation per file, with a header naming every KEYS[i] and ARGV[i].
:class:`Scripts` is owned by one broker (one client); nothing is cached at module level
except the source text, which never changes.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
from collections.abc import Sequence
from typing import Any, cast

import redis
from redis.commands.core import Script

from cogworker.redis.errors import translate_errors
from cogworker.redis.lanes import Lanes

KeyOrArg = str | bytes | int | float

NOSCRIPT_ROUNDS = 3
"""How many times a script is loaded after a NOSCRIPT reply before that reply is raised: a
script flushed again between that load and its EVALSHA (a second SCRIPT FLUSH, a failover
to a replica without it) is loaded once more. NOSCRIPT means the script did not run, so
running it again is safe."""

_KEYS_HEADER = r"^--\s*KEYS\[(\d+)\]"  # compiled on first use: only tests count keys


@functools.cache
def script_source(package: str, name: str) -> str:
    """The text of ``<package>/lua/<name>.lua`` from the installed package.

    Read straight from the package's folder when it has one (``importlib.resources``
    costs a push in a fresh process a millisecond of imports); through
    ``importlib.resources`` for a zipped or otherwise virtual package.
    """
    for folder in getattr(importlib.import_module(package), "__path__", ()):
        path = os.path.join(folder, "lua", f"{name}.lua")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                return file.read()
    from importlib import resources

    return (resources.files(package) / "lua" / f"{name}.lua").read_text(encoding="utf-8")


def declared_key_count(source: str) -> int:
    """How many ``KEYS[i]`` the header declares (a test checks calls against it)."""
    numbers = [int(n) for n in re.findall(_KEYS_HEADER, source, re.MULTILINE)]
    return max(numbers, default=0)


class Scripts:
    """The registered scripts of one Redis client."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._scripts: dict[tuple[str, str], Script] = {}
        self._lock = threading.Lock()
        self.lanes = Lanes(client)

    def get(self, package: str, name: str) -> Script:
        key = (package, name)
        script = self._scripts.get(key)
        if script is None:
            with self._lock:
                script = self._scripts.get(key)
                if script is None:
                    script = self._client.register_script(script_source(package, name))
                    self._scripts[key] = script
        return script

    def run(
        self,
        package: str,
        name: str,
        keys: Sequence[KeyOrArg],
        args: Sequence[KeyOrArg] = (),
        client: Any = None,
        lane: str | None = None,
    ) -> Any:
        """Run a script (EVALSHA, loading it on NOSCRIPT); Redis errors are translated.

        The EVALSHA goes to the client's ``execute_command`` itself: redis-py's ``Script``
        call around it (an import, a pipeline check and the ``evalsha`` layers) cost a
        worker's acknowledgement and claim a fifth of their instructions. A pipeline passed
        as ``client`` goes through ``Script``, which queues the script with it; ``lane``
        (one of :data:`~cogworker.redis.lanes.LANES`, without ``client``) runs it on that
        lane's connection (:mod:`cogworker.redis.lanes`).
        """
        script = self.get(package, name)
        if isinstance(client, redis.client.Pipeline):
            return self._run_queued(script, keys, args, client)
        with translate_errors():
            if lane is None:
                return _evalsha(self._client if client is None else client, script, keys, args)
            with self.lanes.use(lane) as target:
                return _evalsha(target, script, keys, args)

    @staticmethod
    def _run_queued(script: Script, keys: Sequence[KeyOrArg], args: Sequence[KeyOrArg],
                    pipeline: Any) -> Any:
        listed_keys, listed_args = cast(Any, list(keys)), cast(Any, list(args))
        with translate_errors():
            return script(keys=listed_keys, args=listed_args, client=pipeline)


def _evalsha(client: Any, script: Script, keys: Sequence[KeyOrArg],
             args: Sequence[KeyOrArg]) -> Any:
    """EVALSHA on ``client``, loading the script again after a NOSCRIPT reply, up to
    :data:`NOSCRIPT_ROUNDS` times."""
    loads = 0
    while True:
        try:
            return client.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            if loads == NOSCRIPT_ROUNDS:
                raise
            client.script_load(script.script)
            loads += 1
