"""``cogworker.current_batch()``: the batch of the job running here, to add jobs to it.

It is read from the running job (``cogworker.current_job()``, also right in an ``async
def`` job): a job whose payload names a batch (``bid``) is in that batch. Adding from inside a
job pushes the new jobs and then registers them in the batch, while the running job is
still pending in it: the batch cannot complete in between. A crash between the push and
the registration leaves the pushed job outside the batch's counts (it still runs); the
interrupted job runs again and adds its jobs again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.current_job import running_job

if TYPE_CHECKING:
    from cogworker.core.broker.batches import BatchRecord
    from cogworker.core.plugin_host import PluginHost
    from cogworker.plugins.batches.building import Batch

@dataclass(frozen=True, slots=True)
class BatchHandle:
    """The batch a running job belongs to."""

    app: PluginHost
    bid: str
    callback_queue: str

    @contextmanager
    def jobs(self) -> Iterator[Batch]:
        """A block whose pushes join this batch: held, then pushed and registered at a
        clean exit (nothing on an exception), as in ``with app.batch()``."""
        from cogworker.plugins.batches.building import Batch

        with Batch(self.app, bid=self.bid, callback_queue=self.callback_queue,
                   existing=True) as batch:
            yield batch

    def add(self, job: Any, *args: Any, **kwargs: Any) -> str | None:
        """Push ``job(*args, **kwargs)`` into this batch now; returns its jid."""
        with self.jobs() as batch:
            return batch.add(job, *args, **kwargs)

    def push(self, payload: Mapping[str, Any]) -> str | None:
        """Push a raw payload dict into this batch now; returns its jid."""
        with self.jobs() as batch:
            return batch.push(payload)

    def info(self) -> BatchRecord | None:
        """The batch as stored now (``app.batches.get(bid)``)."""
        from cogworker.plugins.batches.runtime import runtime_of

        return runtime_of(self.app).store.get(self.bid)


def current_batch() -> BatchHandle | None:
    """The batch of the job running in this context, or None (not in a batch job)."""
    from cogworker.plugins.batches.building import BID_FIELD, QUEUE_FIELD

    running = running_job()
    if running is None:
        return None
    bid = running.job.get(BID_FIELD)
    if not isinstance(bid, str) or not bid:
        return None
    queue = running.job.get(QUEUE_FIELD)
    return BatchHandle(running.app, bid, queue if isinstance(queue, str) and queue
                       else "default")
