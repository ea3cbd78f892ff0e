"""The application object: settings, job registry, plugins, broker and the push path."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from cogworker.core.broker.factory import (
    inactive_broker_schemes,
    unknown_scheme_error,
    url_scheme,
)
from cogworker.core.client import Client, Dispatcher
from cogworker.core.config_sources import load_settings
from cogworker.core.enqueuer import P
from cogworker.core.errors import CogworkerError, ConfigurationError
from cogworker.core.job import Job, JobDecorator, JobFunction, R
from cogworker.core.job_options import APP_OWNER, JobOption, OptionCatalog
from cogworker.core.registry import JobRegistry
from cogworker.core.settings import DEACTIVATE_PREFIX
from cogworker.supervisor import lineage

if TYPE_CHECKING:
    from cogworker.api.batches import Batches
    from cogworker.api.history import History
    from cogworker.api.status import JobStatus
    from cogworker.core.broker import Attempt, Broker
    from cogworker.core.hooks import Hooks
    from cogworker.core.middleware import ClientMiddleware, ServerMiddleware
    from cogworker.core.payload import Payload
    from cogworker.core.periodic_types import PeriodicEntry
    from cogworker.core.settings import Settings
    from cogworker.plugins.batches import Batch
    from cogworker.testing.modes import Testing
    from cogworker.workflows.results import JobResult

logger = logging.getLogger(__name__)

J = TypeVar("J", bound=type[Job])
_NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})
DeathHandler = Callable[..., Any]


def make_identity() -> str:
    """``<hostname>:<pid>:<12 hex>``; ``DYNO`` overrides the hostname (as the original)."""
    host = os.environ.get("DYNO") or socket.gethostname()
    return f"{host}:{os.getpid()}:{lineage.identity_suffix()}"


class App:
    """A cogworker application.

    ::

        app = cogworker.App(redis_url="redis://localhost:6379/0")

        @app.job(queue="mail", retry=5)
        def send_welcome(user_id): ...

        send_welcome.perform_async(42)

    Keyword arguments are settings (see the settings reference); the config file, the
    ``COGWORKER_*`` environment and command-line flags override them, in that order.
    When no Redis URL is configured anywhere, a private ``redis-server`` is started (or
    reused) under ``.cogworker/`` in the working directory.
    """

    def __init__(self, redis_url: str | None = None, namespace: str = "cogworker",
                 **settings: Any) -> None:
        code: dict[str, Any] = {"namespace": namespace, **settings}
        if redis_url is not None:
            code["redis_url"] = redis_url
        self._code_settings = code
        self._settings: Settings | None = None
        self._lock = threading.RLock()
        self._broker: Broker | None = None
        self._hooks: Hooks | None = None
        self._configured_hooks: Hooks | None = None  # set once configure() has run
        self._client = Client(self)
        self._declared_options: list[JobOption | str] = []
        self._option_catalog: tuple[Hooks, OptionCatalog] | None = None
        self.registry = JobRegistry(self.job_option_catalog)
        self.identity = make_identity()
        self.death_handlers: list[DeathHandler] = []
        self.client_middleware: list[ClientMiddleware] = []
        self.server_middleware: list[ServerMiddleware] = []
        self.extras: dict[str, Any] = {}
        self.dispatch_override: Dispatcher | None = None
        self.clock: Callable[[], float] = time.time
        """The time pushes use (``at``, ``created_at``); ``app.testing.freeze`` replaces it."""
        self._testing: Testing | None = None
        self.project_dir = Path.cwd()
        self.may_start_server = True
        """False for commands that only look (``cogworker stats``...): with no Redis URL set
        they use the project's private redis-server only if it already runs."""
        self.settings  # noqa: B018 -- validate now: a bad setting fails at construction

    # settings ----------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        with self._lock:
            if self._settings is None:
                self._settings = load_settings(code=self._code_settings, cwd=self.project_dir)
            return self._settings

    def configure(
        self,
        *,
        config_path: Path | None = None,
        cli: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Settings:
        """Reload settings from every source (the CLI calls this with its flags)."""
        with self._lock:
            if cwd is not None:
                self.project_dir = cwd
            self._settings = load_settings(
                code=self._code_settings, config_path=config_path, cwd=self.project_dir,
                environ=environ, cli=cli or {},
            )
            self._close_broker()
            self._hooks = self._configured_hooks = None
            self._option_catalog = None
            self.registry.check_all()  # the plugins may differ now: --plugin X, no:NAME
            return self._settings

    def options(self, plugin_name: str) -> Mapping[str, Any]:
        """Plugin ``plugin_name``'s options: ``plugin_options.<name>`` of the settings, {}
        when none are set (see :class:`cogworker.core.plugin_host.PluginHost`)."""
        return self.settings.plugin_options.get(plugin_name, _NO_OPTIONS)

    def logger(self, plugin_name: str) -> logging.Logger:
        """The logger of plugin ``plugin_name`` (``cogworker.plugin.<name>``)."""
        from cogworker.core.plugin_host import plugin_logger

        return plugin_logger(plugin_name)

    @property
    def testing(self) -> Testing:
        """Test modes, recorded jobs and the test clock (``docs/how-to/test-your-jobs.md``)."""
        with self._lock:
            if self._testing is None:
                from cogworker.testing.modes import Testing

                self._testing = Testing(self)
            return self._testing

    # plugins and broker --------------------------------------------------------------------
    @property
    def hooks(self) -> Hooks:
        configured = self._configured_hooks  # every push asks: no lock once they exist
        if configured is not None:
            return configured
        with self._lock:
            if self._hooks is None:
                from cogworker.core.hooks import Hooks

                hooks = Hooks.from_settings(self.settings.fetch, self.settings.plugins,
                                            self.settings)
                self._hooks = hooks  # a plugin's configure may ask for app.hooks
                hooks.configure(self)
                if self._broker is None:  # a broker given with use_broker needs no plugin
                    self._check_broker_scheme(hooks)
                self._configured_hooks = hooks
            return self._hooks

    def declare_job_options(self, *options: JobOption | str) -> None:
        """Declare job options that the app's own middleware reads (Sidekiq's custom
        options), before decorating the jobs that set them::

            app.declare_job_options("tenant", cogworker.JobOption("priority", "0 to 9",
                                                                  lambda v: v in range(10)))

        A bare name accepts any JSON value. Options read by a plugin are declared by the
        plugin itself (the ``cogworker_job_options`` hook).
        """
        catalog = OptionCatalog()
        catalog.add(APP_OWNER, [*self._declared_options, *options])  # fails early on a clash
        with self._lock:
            self._declared_options.extend(options)
            self._option_catalog = None

    def job_option_catalog(self) -> OptionCatalog:
        """Every job option this app accepts: cogworker's, the active plugins' (and those of
        plugins deactivated by name), and the app's own."""
        hooks = self.hooks
        with self._lock:
            cached = self._option_catalog
            if cached is not None and cached[0] is hooks:
                return cached[1]
            from cogworker.core import plugins

            catalog = OptionCatalog()
            catalog.add(APP_OWNER, self._declared_options)
            for owner, options in hooks.job_options():
                catalog.add(f"plugin {owner!r}", options)
            active = {name for name, _plugin in hooks.plugin_manager.list_name_plugin()}
            blocked = {change.removeprefix(DEACTIVATE_PREFIX) for change in self.settings.plugins
                       if change.startswith(DEACTIVATE_PREFIX)} - active
            if blocked:
                for owner, declared in plugins.job_options_of(plugins.discover(), blocked):
                    catalog.add(f"plugin {owner!r} (deactivated)",
                                [o for o in declared if isinstance(o, (str, JobOption))],
                                active=False)
            self._option_catalog = (hooks, catalog)
            return catalog

    def _check_broker_scheme(self, hooks: Hooks) -> None:
        """An unset URL or a scheme no active broker plugin owns fails at start-up, naming
        the active broker plugins, their schemes and where the URL was set."""
        settings = self.settings
        owners = hooks.broker_schemes()
        if url_scheme(settings.redis_url) not in owners:
            active = [name for name, _plugin in hooks.plugin_manager.list_name_plugin()]
            error = unknown_scheme_error("redis_url", settings.redis_url, owners,
                                         inactive_broker_schemes(active))
            source = settings.sources.get("redis_url")
            raise ConfigurationError(error.field, error.value, error.accepted, source)

    def redis_location(self) -> str:
        """Where this app's broker is, for error messages: what the broker describes (no
        password) and where the ``redis_url`` setting came from, or that none is set."""
        from cogworker.core.config_sources import describe_source

        where = self._built_broker_description()
        if self.settings.redis_url:
            source = describe_source(self.settings.source_of("redis_url"))
            return f"{where} (setting redis_url, from {source})"
        return f"{where} (the private server: no redis_url setting is set anywhere)"

    def _built_broker_description(self) -> str:
        try:
            return self.broker.describe()
        except CogworkerError:  # the broker cannot even be built: say what is configured
            scheme = url_scheme(self.settings.redis_url)
            return f"a {scheme}:// URL" if scheme else f"the private broker of {self.project_dir}"

    @property
    def broker(self) -> Broker:
        """The broker the active broker plugin builds for ``redis_url`` (on first use).

        Raises :class:`~cogworker.core.errors.ConfigurationError` naming the active broker
        plugins and their schemes when none owns the URL's scheme.
        """
        existing = self._broker  # assigned only once built: no lock needed to read it
        if existing is not None:
            return existing
        with self._lock:
            if self._broker is None:
                settings, hooks = self.settings, self.hooks
                broker = hooks.make_broker(settings, self.project_dir, self.may_start_server)
                if broker is None:
                    raise unknown_scheme_error("redis_url", settings.redis_url,
                                               hooks.broker_schemes())
                self._broker = broker
            return self._broker

    def use_broker(self, broker: Broker) -> None:
        """Use this broker instead of building one from the settings (tests, embedding)."""
        with self._lock:
            self._close_broker()
            self._broker = broker

    def _close_broker(self) -> None:
        if self._broker is not None:
            self._broker.close()
            self._broker = None

    def close(self) -> None:
        """Close connections. The app can be used again afterwards (it reconnects)."""
        with self._lock:
            self._close_broker()

    # jobs ----------------------------------------------------------------------------------
    # The options are checked when the job is declared, against the options the active
    # plugins declare, so they are Any here. A Job subclass is callable too: the class
    # overload comes first, and wins.
    @overload
    def job(  # pyright: ignore[reportOverlappingOverload]
        self, target: J, /, **options: Any) -> J: ...

    @overload
    def job(self, target: Callable[P, R], /, **options: Any) -> JobFunction[P, R]: ...

    @overload
    def job(self, target: None = None, /, **options: Any) -> JobDecorator: ...

    def job(self, target: Any = None, /, *, name: str | None = None,
            retry_in: Callable[..., Any] | None = None,
            retries_exhausted: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Register a function or a :class:`cogworker.Job` subclass as a job.

        Options: ``queue`` (default "default"), ``retry`` (True = 25 retries, False, or a
        number), ``backtrace`` (keep the failure's backtrace: True, False or a number of
        lines), ``name`` (the stored job name; default the import path),
        ``retry_in(count, exc, job)`` and ``retries_exhausted(job, exc)`` for function
        jobs, and the options the active plugins declare (the ``unique`` plugin:
        ``unique``, ``unique_for``, ``unique_args``) or :meth:`declare_job_options` adds.
        An undeclared option is a :class:`JobDefinitionError` naming the closest one.

        The job keeps its signature for type checkers: a function becomes a
        ``JobFunction[P, R]`` whose ``perform_async(...)`` takes the function's
        arguments, and a class's ``perform_async(...)`` takes its ``perform``'s. A job
        cannot have keyword-only parameters or ``**kwargs`` (its arguments are stored as
        one positional list): that is a :class:`JobDefinitionError` here.
        """

        def register(obj: Any) -> Any:
            definition = self.registry.register(
                obj, name=name, options=options, retry_in=retry_in,
                retries_exhausted=retries_exhausted,
            )
            if isinstance(obj, type) and issubclass(obj, Job):
                obj._cogworker_app = self
                obj._cogworker_definition = definition
                return obj
            return JobFunction(self, definition, obj)

        if target is not None:
            return register(target)
        return register

    def death_handler(self, handler: DeathHandler) -> DeathHandler:
        """Register ``handler(job, exception)``, called when a job moves to dead."""
        self.death_handlers.append(handler)
        return handler

    def periodic(self, cron: str, job: Any, *, args: Sequence[Any] | None = None,
                 retry: Any = 0, unique: str | None = None, queue: str | None = None,
                 replace: bool = False) -> PeriodicEntry:
        """Run ``job`` on a cron schedule (see :func:`cogworker.periodic.register`)."""
        from cogworker.periodic.registration import register

        return register(self, cron, job, args=args, retry=retry, unique=unique, queue=queue,
                        replace=replace)

    # pushing -------------------------------------------------------------------------------
    def push(self, payload: Mapping[str, Any]) -> str | None:
        """Push a raw payload dict (``class``, ``args``, ``queue``...). Returns the jid."""
        return self._client.push(payload)

    def submit(self, payload: Payload) -> str | None:
        """Push a payload that is already complete: ``class``, checked ``args``, ``queue``,
        ``jid``, ``retry`` and ``created_at`` set (``perform_async`` builds such)."""
        return self._client.submit(payload)

    def push_bulk(self, job: Any, args_list: Iterable[Sequence[Any]],
                  **overrides: Any) -> list[str | None]:
        """Push many jobs of one kind with one round trip per 1,000 jobs.

        Each item of ``args_list`` is one job's positional arguments, checked against the
        job's parameters like a ``perform_async`` call's: one that does not fit raises
        :class:`~cogworker.core.errors.JobCallError` naming its index, before any is pushed.
        """
        if isinstance(job, JobFunction):
            definition = job.definition
        elif isinstance(job, type) and issubclass(job, Job) and job._cogworker_definition:
            definition = job._cogworker_definition
        else:
            definition = self.registry.resolve(str(job))
        options = {**definition.options, **overrides}
        options.pop("at", None)
        items = [{"class": definition.name, **options, "args": args}
                 for args in definition.call.positional_each(args_list)]
        return self._client.push_bulk(items)

    def batch(self, description: str = "", *, on_success: Any = None, on_complete: Any = None,
              on_death: Any = None, callback_queue: str | None = None) -> Batch:
        """``with app.batch(...) as batch:``: jobs pushed inside join a batch (``batches``)."""
        from cogworker.plugins.batches import Batch
        return Batch(self, description=description, on_success=on_success,
                     on_complete=on_complete, on_death=on_death, callback_queue=callback_queue)

    # observing -----------------------------------------------------------------------------
    def status(self, jid: str) -> JobStatus | None:
        """The job's status (``status`` plugin), or None: unknown or expired."""
        from cogworker.api.status import job_status

        return job_status(self, jid)

    def attempts(self, jid: str) -> list[Attempt]:
        """The job's failure trail (``attempts`` plugin), oldest first."""
        from cogworker.api.status import job_attempts

        return job_attempts(self, jid)

    def result(self, jid: str) -> JobResult:
        """The stored result of workflow step ``jid`` (``workflows`` plugin):
        ``app.result(jid).get(timeout=5)``. Only steps of a workflow have one."""
        from cogworker.workflows.results import JobResult

        return JobResult(self, jid)

    @property
    def batches(self) -> Batches:
        """The batches the ``batches`` plugin keeps (:mod:`cogworker.api.batches`)."""
        from cogworker.api.batches import Batches
        return Batches(self)

    @property
    def history(self) -> History:
        """The run history the ``history`` plugin records (:mod:`cogworker.api.history`)."""
        from cogworker.api.history import History

        return History(self)
