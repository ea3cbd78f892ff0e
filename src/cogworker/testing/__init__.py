"""Testing support: ``app.testing`` (fake and inline modes, recorded jobs, the test clock),
the pytest plugin (:mod:`cogworker.testing.pytest_plugin`) and an in-process worker.

See ``docs/how-to/test-your-jobs.md``. The in-memory broker for engine unit tests is
:mod:`cogworker.testing.memory`.
"""

from __future__ import annotations

from cogworker.core.errors import EmptyQueueError, TestingError
from cogworker.testing.modes import Restore, Testing
from cogworker.testing.worker import InProcessWorker

__all__ = ["EmptyQueueError", "InProcessWorker", "Restore", "Testing", "TestingError"]
