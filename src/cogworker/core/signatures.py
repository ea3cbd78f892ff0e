"""``job.s(...)``: a job call written down to run later, as a step of a workflow.

A :class:`Signature` is immutable: the job, the arguments as written, one-call option
overrides (``queue=``, ``retry=``... through :meth:`Signature.set` or ``job.set(...).s()``)
and whether it takes the previous step's result (``s``) or not (``si``: immutable, as in
Celery). It is checked where it is written: its arguments must be JSON and must fit the
job's parameters, as written or (for ``s``) with one more argument in front, where a chain
puts the previous step's result. The workflow that places it (``chain``, ``group``,
``chord`` in :mod:`cogworker.workflows`) checks it again for its exact place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import JobCallError
from cogworker.core.payload import Payload, check_json_args, complete

if TYPE_CHECKING:
    from cogworker.core.enqueuer import EnqueueHost
    from cogworker.core.job_definition import JobDefinition

_RESULT = object()
"""Stands for the previous step's result while a step's arguments are laid out."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    """One job call, written down for a workflow (``job.s(...)`` / ``job.si(...)``)."""

    job: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    options: tuple[tuple[str, Any], ...] = ()
    immutable: bool = False
    """True for ``si``: the step never receives the previous step's result."""
    host: EnqueueHost = field(compare=False, repr=False)
    definition: JobDefinition = field(compare=False, repr=False)

    @classmethod
    def of(cls, host: EnqueueHost, definition: JobDefinition, args: Sequence[Any],
           kwargs: Mapping[str, Any], overrides: Mapping[str, Any], *,
           immutable: bool) -> Signature:
        """A checked signature: raises :class:`JobArgumentError` for an argument that is not
        JSON and :class:`JobCallError` for arguments that do not fit the job."""
        check_json_args(definition.name, [*args, *kwargs.values()])
        signature = cls(job=definition.name, args=tuple(args),
                        kwargs=tuple(kwargs.items()), options=tuple(overrides.items()),
                        immutable=immutable, host=host, definition=definition)
        signature.check_fits()
        return signature

    def set(self, **overrides: Any) -> Signature:
        """The same call with options changed (``queue=``, ``retry=``...), checked now."""
        self.host.registry.check_overrides(self.definition, overrides)
        merged = {**dict(self.options), **overrides}
        return Signature(job=self.job, args=self.args, kwargs=self.kwargs,
                         options=tuple(merged.items()), immutable=self.immutable,
                         host=self.host, definition=self.definition)

    @property
    def takes_result(self) -> bool:
        return not self.immutable

    def check_fits(self) -> None:
        """Raise :class:`JobCallError` unless the arguments fit as written or, for ``s``,
        with the previous step's result in front."""
        try:
            self.laid_out(with_result=False)
        except JobCallError as as_written:
            if self.immutable:
                raise
            try:
                self.laid_out(with_result=True)
            except JobCallError as with_result:
                raise JobCallError(
                    self.job, as_written.signature, as_written.arguments,
                    f"{as_written.problem} (and with the previous step's result in front: "
                    f"{with_result.problem})") from None

    def laid_out(self, *, with_result: bool) -> list[Any]:
        """The stored arguments after the result's place (when ``with_result``), or all of
        them; raises :class:`JobCallError` when they do not fit in that place."""
        leading = [_RESULT] if with_result else []
        shown = self._shown(with_result)
        call = self.definition.call
        positional = call.positional([*leading, *self.args], dict(self.kwargs), shown=shown)
        return list(positional)[len(leading):]

    def payload(self, now: float, *, with_result: bool) -> Payload:
        """A complete payload of this call (jid, queue, retry, created_at); with
        ``with_result``, its ``args`` hold only what follows the result, which the
        workflow puts in front when the previous step has finished."""
        definition = self.definition
        payload: Payload = {"class": definition.name, **definition.options,
                            **dict(self.options)}
        payload["args"] = self.laid_out(with_result=with_result)
        return complete(payload, now)

    def _shown(self, with_result: bool) -> str:
        written = [repr(arg) for arg in self.args]
        written += [f"{name}={value!r}" for name, value in self.kwargs]
        if with_result:
            written.insert(0, "<previous result>")
        return f"the step {self.job}.{'si' if self.immutable else 's'}({', '.join(written)})"
