"""Turning ``on_success=notify`` / ``on_complete=(notify, user_id)`` into stored callback
templates, checked where the batch is built (before anything is pushed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cogworker.core.broker.batches import (
    ARGS_PLACEHOLDER,
    NOW_PLACEHOLDER,
    BatchCounts,
    CallbackKind,
    CallbackTemplate,
)
from cogworker.core.errors import CogworkerError
from cogworker.core.job import Job, JobFunction
from cogworker.core.payload import check_json_args, complete, dumps, encode
from cogworker.plugins.batches.errors import BatchError

if TYPE_CHECKING:
    from cogworker.core.job_definition import JobDefinition
    from cogworker.core.plugin_host import PluginHostBase

CallbackTarget = Any
"""A job function, a ``Job`` class, a registered job name, or a tuple ``(job, *extra)``."""


def _lookup(app: PluginHostBase, target: object, what: str) -> JobDefinition | None:
    if isinstance(target, JobFunction):
        found: JobDefinition | None = target.definition
        return found
    if isinstance(target, type) and issubclass(target, Job):
        return target.__dict__.get("_cogworker_definition")
    if isinstance(target, str):
        return app.registry.get(target)
    raise BatchError(f"{what} must be a job (a function or class decorated with @app.job, "
                     f"or its name), or a tuple (job, *extra_args); got {target!r}")


def definition_of(app: PluginHostBase, target: object, what: str) -> JobDefinition:
    """The registered job ``target`` names, or a :class:`BatchError` saying what to do."""
    definition = _lookup(app, target, what)
    if definition is None:
        raise BatchError(f"{what}: {target!r} is not a job registered on this app; decorate "
                         "it with @app.job (or pass a registered name)")
    if app.registry.get(definition.name) is not definition:
        raise BatchError(f"{what}: job {definition.name!r} is registered on another app")
    return definition


def template_of(app: PluginHostBase, kind: CallbackKind, target: CallbackTarget,
                queue: str, now: float) -> CallbackTemplate:
    """The stored form of one callback; raises :class:`BatchError` for a callback that is
    not a registered job or whose arguments ``(bid, counts, *extra)`` do not fit it."""
    what = f"on_{kind}"
    job, *extra = target if isinstance(target, tuple) else (target,)
    definition = definition_of(app, job, what)
    try:
        extra_args = check_json_args(definition.name, extra)
        definition.call.positional(("bid", BatchCounts().to_dict(), *extra_args), {})
    except CogworkerError as exc:
        raise BatchError(f"{what}={definition.name} cannot take the arguments a batch "
                         f"callback receives, (bid, counts, *extra): {exc}") from exc
    payload: dict[str, Any] = {"class": definition.name, **definition.options,
                               "queue": queue, "args": "@@batch-args@@"}
    for timing in ("at", "expires_in", "expires_at"):  # a callback runs when it is due
        payload.pop(timing, None)
    complete(payload, now)
    payload["enqueued_at"] = "@@batch-now@@"
    raw = encode(payload)
    if ARGS_PLACEHOLDER not in raw or NOW_PLACEHOLDER not in raw:
        raise BatchError(f"{what}={definition.name}: its options hide the callback's "
                         "arguments (an option named 'args' or 'enqueued_at'?)")
    return CallbackTemplate(kind=kind, raw=raw, extra=dumps(extra_args)[1:-1])


def templates_of(app: PluginHostBase, callbacks: Mapping[CallbackKind, CallbackTarget | None],
                 queue: str, now: float) -> tuple[CallbackTemplate, ...]:
    return tuple(template_of(app, kind, target, queue, now)
                 for kind, target in callbacks.items() if target is not None)
