"""What the registry knows about one job: :class:`JobDefinition` (its name, target,
options, hooks and call signature), and the split of its options into those stored in
every payload and those kept on the definition."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogworker.core.job_options import check_reserved, stays_on_definition
from cogworker.core.job_signature import CallSignature
from cogworker.core.payload import DEFAULT_QUEUE, Payload, check_json_args

if TYPE_CHECKING:
    from cogworker.core.job import Job

RetryIn = Callable[..., Any]
RetriesExhausted = Callable[..., Any]


@dataclass(slots=True)
class JobDefinition:
    """What the registry knows about one job name."""

    name: str
    target: Callable[..., Any] | type[Job]
    options: dict[str, Any] = field(default_factory=dict)
    retry_in: RetryIn | None = None
    retries_exhausted: RetriesExhausted | None = None
    local_options: dict[str, Any] = field(default_factory=dict)
    """Options whose value is callable (``unique_args``): read by plugins, never stored."""
    plugin: str | None = None
    """The plugin that registered this job for itself (None: one of the app's jobs)."""
    call: CallSignature = field(init=False)
    """The job's parameters: checks each enqueue's arguments and lays them out."""

    def __post_init__(self) -> None:
        self.call = CallSignature.of(self.name, self.target)

    @property
    def unique_args(self) -> Callable[[list[Any]], list[Any]] | None:
        """The ``unique_args`` option (read by the unique plugin), or None."""
        chooser = self.local_options.get("unique_args")
        return chooser if callable(chooser) else None

    @property
    def is_class(self) -> bool:
        return isinstance(self.target, type)

    @property
    def is_async(self) -> bool:
        from cogworker.core.job import Job  # a cycle at import time: job.py imports this

        target = self.target
        func = target.perform if isinstance(target, type) and issubclass(target, Job) else target
        return inspect.iscoroutinefunction(func)

    @property
    def queue(self) -> str:
        return str(self.options.get("queue", DEFAULT_QUEUE))

    def instantiate(self, jid: str, job: Payload) -> Any:
        """The object whose ``perform`` runs the job (a Job instance or the function)."""
        if isinstance(self.target, type):
            instance = self.target()
            instance.jid = jid
            instance.job = job
            return instance
        return self.target

    def perform_callable(self, instance: Any) -> Callable[..., Any]:
        method: Callable[..., Any] = instance.perform if self.is_class else instance
        return method


def split_options(name: str, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(stored, local)``: the options copied into every payload (plain JSON), and those
    whose value is callable (``unique_args``) or a plugin's object (a limiter,
    :func:`~cogworker.core.job_options.stays_on_definition`), kept on the definition only.

    Raises :class:`JobDefinitionError` for an option cogworker sets itself (``jid``...) and
    :class:`JobArgumentError` for a value that is neither JSON nor callable. Whether each
    option is declared, and its value valid, is checked by the registry
    (:mod:`cogworker.core.job_options`).
    """
    check_reserved(name, options)
    stored = {key: value for key, value in options.items() if not stays_on_definition(value)}
    local = {key: value for key, value in options.items() if stays_on_definition(value)}
    check_json_args(name, [stored])
    return stored, local
