"""Testing support: ``app.testing`` (fake and inline modes, recorded jobs, the test clock),
the pytest plugin (:mod:`cogworker.testing.pytest_plugin`) and an in-process worker.

See ``docs/how-to/test-your-jobs.md``. The in-memory broker (the whole broker contract in
one process, what fake and inline mode push to, and the ``memory`` plugin's ``memory://``
URLs) is :mod:`cogworker.testing.memory_broker`; the built-in fetchers run on it. The
heavier names are imported on first use, so loading the pytest plugin stays cheap for test
runs that never touch cogworker.
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
