"""What an app offers beyond pushing jobs: the operator's calls on single jobs (cancel,
status, attempts) and the views of what the built-in plugins keep (history, limiters).

A mixin of :class:`cogworker.App`, kept apart so that ``app.py`` stays about settings,
plugins, the broker and pushing; each call imports its module on first use, so an app that
never asks pays nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from cogworker.api.batches import Batches
    from cogworker.api.cancel import CancelResult
    from cogworker.api.history import History
    from cogworker.api.limits import Limits
    from cogworker.api.status import JobStatus
    from cogworker.app import App
    from cogworker.core.broker import Attempt
    from cogworker.plugins.batches import Batch
    from cogworker.plugins.limits.limiter import Limiter
    from cogworker.workflows.results import JobResult


class AppFeatures:
    """``app.cancel``, ``app.status``, ``app.attempts``, ``app.batch``, ``app.batches``,
    ``app.result``, ``app.limiter``, ``app.limits``, ``app.history``."""

    @property
    def _app(self) -> App:
        return cast("App", self)

    def cancel(self, jid: str) -> CancelResult:
        """Cancel job ``jid``: removed if it waits, told if it runs, kept ``ttl`` so it
        never starts later (:mod:`cogworker.api.cancel`; workers need the cancel plugin).
        In fake and inline mode, the recorded and test-run jobs (:mod:`cogworker.testing.
        cancel`)."""
        testing = self._app._testing
        if testing is not None and testing.mode != "disabled":
            return testing.cancel(jid)
        from cogworker.api.cancel import cancel_job

        return cancel_job(self._app, jid)

    def status(self, jid: str) -> JobStatus | None:
        """The job's status (``status`` plugin), or None: unknown or expired."""
        from cogworker.api.status import job_status

        return job_status(self._app, jid)

    def attempts(self, jid: str) -> list[Attempt]:
        """The job's failure trail (``attempts`` plugin), oldest first."""
        from cogworker.api.status import job_attempts

        return job_attempts(self._app, jid)

    def result(self, jid: str) -> JobResult:
        """The stored result of workflow step ``jid`` (``workflows`` plugin):
        ``app.result(jid).get(timeout=5)``. Only steps of a workflow have one."""
        from cogworker.workflows import JobResult  # the package first (plugins/workflows.py)

        return JobResult(self._app, jid)

    @property
    def limiter(self) -> Limiter:
        """Fleet-wide limiters (``limits`` plugin): ``concurrent``, ``window``, ``bucket``,
        for ``@app.job(limits=[...])`` or inline ``with app.limiter.concurrent(...):``."""
        from cogworker.plugins.limits.limiter import limiter_of

        return limiter_of(self._app)

    @property
    def limits(self) -> Limits:
        """The fleet's limiters with their usage, and resetting one
        (:mod:`cogworker.api.limits`)."""
        from cogworker.api.limits import Limits

        return Limits(self._app)

    @property
    def history(self) -> History:
        """The run history the ``history`` plugin records (:mod:`cogworker.api.history`)."""
        from cogworker.api.history import History

        return History(self._app)

    def batch(self, description: str = "", *, on_success: Any = None, on_complete: Any = None,
              on_death: Any = None, callback_queue: str | None = None) -> Batch:
        """``with app.batch(...) as batch:``: jobs pushed inside join a batch (``batches``)."""
        from cogworker.plugins.batches import Batch

        return Batch(self._app, description=description, on_success=on_success,
                     on_complete=on_complete, on_death=on_death, callback_queue=callback_queue)

    @property
    def batches(self) -> Batches:
        """The batches the ``batches`` plugin keeps (:mod:`cogworker.api.batches`)."""
        from cogworker.api.batches import Batches

        return Batches(self._app)
