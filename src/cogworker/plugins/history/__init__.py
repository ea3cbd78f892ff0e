"""Plugin ``history``: one record per run of a job (each success and each failed attempt).

Off by default: activate it with ``--plugin history`` (or ``plugins = ["history"]``).
Written only against the hooks and the broker's optional facet
:data:`~cogworker.core.broker.HISTORY`, so another plugin can replace it
(``--plugin no:history --plugin acme-history``):

* a **server middleware** times every run and keeps what its record needs; the record is
  jid, class, queue, the arguments' JSON (capped: ``args_max_bytes``), ``success``/
  ``failed``, started and finished times, the duration, and for a failure the error's
  class, message and the first ``backtrace_max_lines`` lines of its traceback (at most
  ``backtrace_max_bytes``). A success with scalar arguments is kept as a tuple and made
  into its record by the flush thread; a failure is made into one at once;
* the records are written in **one broker call a second** by a background flush thread
  started with the worker (``cogworker_startup``) and stopped, after a last write, with it
  (``cogworker_shutdown``); each write also counts the runs per UTC day and trims the
  history by age (``retention_days``) and by count (``max_entries``);
* an expired job (``cogworker_job_expired``) and a job cancelled before it started
  (``cogworker_job_cancelled``) get a record too, status ``expired`` / ``cancelled``, with
  no duration; a run stopped by its cancellation is recorded ``cancelled`` with its times;
* everything is best-effort: a broker error is logged (once per outage) and the records
  wait in memory for the next write; a job is never failed, slowed or run again by it.

A broker without the facet gets one warning when the worker builds its middleware, and the
plugin stays idle. Reading: :mod:`cogworker.api.history` (``app.history``) and
``cogworker history``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, cast

from cogworker.core.background_flush import BackgroundFlush
from cogworker.core.broker import HISTORY
from cogworker.core.markers import hookimpl
from cogworker.plugins.history.options import PLUGIN_NAME, HistoryOptions
from cogworker.plugins.history.recorder import HistoryRecorder

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import ServerMiddleware
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost, PluginHostBase

logger = logging.getLogger("cogworker.history")

RECORDER_KEY: Final = f"{PLUGIN_NAME}:recorder"
"""Where this app's recorder lives in ``app.extras`` (its options are under ``history``)."""


def options_of(app: PluginHostBase) -> HistoryOptions:
    """This app's checked options (parsed at configure, or now if configure has not run)."""
    options = app.extras.get(PLUGIN_NAME)
    if not isinstance(options, HistoryOptions):
        options = HistoryOptions.parse(app.options(PLUGIN_NAME),
                                       app.settings.sources.get("plugin_options"))
        app.extras[PLUGIN_NAME] = options
    return options


def recorder_of(app: PluginHost) -> HistoryRecorder | None:
    """The recorder of this app's broker (made on first use, again when the app changes
    broker, as test modes do); None when the broker keeps no history."""
    broker = app.broker
    kept = app.extras.get(RECORDER_KEY)
    if kept is not None and kept[0] is broker:
        return cast("HistoryRecorder | None", kept[1])
    store = broker.extension(HISTORY)
    if store is None:
        logger.warning("the history plugin is active but broker %s keeps no run history (it "
                       "has no %r facet): no history is recorded", broker.name, HISTORY.name)
        recorder = None
    else:
        recorder = HistoryRecorder(store, options_of(app), app.clock)
    app.extras[RECORDER_KEY] = (broker, recorder)
    return recorder


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    """Check ``plugin_options.history`` (a bad value stops start-up)."""
    app.extras.pop(PLUGIN_NAME, None)
    app.extras.pop(RECORDER_KEY, None)
    options_of(app)


@hookimpl(tryfirst=True)
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware | None:
    """The outermost middleware, so the record sees every other one's failure too."""
    recorder = recorder_of(app)
    return None if recorder is None else recorder.middleware


@hookimpl
def cogworker_job_expired(app: PluginHost, job: Payload, late: float) -> None:
    """An ``expired`` record: the job was dropped unrun, ``late`` seconds too late."""
    recorder = recorder_of(app)
    if recorder is not None:
        recorder.record_unrun(job, "expired", f"not started by its expires_at ({late:.1f} s "
                              "late); dropped without running")


@hookimpl
def cogworker_job_cancelled(app: PluginHost, job: Payload, when: str) -> None:
    """A ``cancelled`` record for a job that never ran (a stopped run's record is the
    middleware's, with its times)."""
    recorder = recorder_of(app)
    if recorder is not None and when == "before_start":
        recorder.record_unrun(job, "cancelled", "cancelled before it started")


@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    recorder = recorder_of(worker.app)
    if recorder is None:
        return
    if recorder.flusher is None:
        recorder.flusher = BackgroundFlush("history-flush", recorder.flush)
    recorder.flusher.start()


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """Stop the flush thread after its last write."""
    recorder = recorder_of(worker.app)
    if recorder is not None and recorder.flusher is not None:
        recorder.flusher.stop()
