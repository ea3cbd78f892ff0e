"""The errors the ``batches`` plugin raises."""

from __future__ import annotations

from cogworker.core.errors import CogworkerError


class BatchError(CogworkerError, ValueError):
    """A batch cannot be built as asked: an unregistered callback, callback arguments that
    do not fit, the plugin not active, a batch used after it was committed."""


class BatchSettleError(CogworkerError, ConnectionError):
    """A batch job's outcome could not be recorded (the broker stayed unreachable); the job
    is failed so that its retry records it, rather than acknowledged unrecorded."""
