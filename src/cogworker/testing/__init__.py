"""Testing support: ``app.testing`` (fake and inline modes, recorded jobs, the test clock),
the pytest plugin (:mod:`cogworker.testing.pytest_plugin`) and an in-process worker.

See ``docs/how-to/test-your-jobs.md``. The in-memory broker for engine unit tests is
:mod:`cogworker.testing.memory`. The heavier names are imported on first use, so loading
the pytest plugin stays cheap for test runs that never touch cogworker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cogworker.core.errors import EmptyQueueError, TestingError

if TYPE_CHECKING:
    from cogworker.testing.modes import Restore, Testing
    from cogworker.testing.worker import InProcessWorker

_LAZY = {
    "Restore": "cogworker.testing.modes",
    "Testing": "cogworker.testing.modes",
    "InProcessWorker": "cogworker.testing.worker",
}

__all__ = ["EmptyQueueError", "InProcessWorker", "Restore", "Testing", "TestingError"]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cogworker.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
