"""A job's call signature: checked when the job is declared, and used at every enqueue to
check the arguments and lay keyword arguments out at their positions.

A payload stores its arguments as one positional JSON array (``"args": [...]``), which is
what a Ruby or Sidekiq worker reads and what the worker passes to the job as ``*args``.
So keyword arguments are bound to their parameters with :meth:`inspect.Signature.bind`
and stored at those parameters' positions; a default is not stored unless a later
argument needs its slot (``f(a, b=1, c=2)`` called as ``(0, c=5)`` stores ``[0, 1, 5]``,
called as ``(0,)`` stores ``[0]``), so a changed default applies to jobs already queued,
as it would in Ruby. Keyword-only parameters and ``**kwargs`` have no position: a job that
declares them is refused at decoration.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cogworker.core.errors import JobCallError, JobDefinitionError

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_SHOWN_LIMIT = 200  # characters of a call's arguments shown in an error


def signature_of(target: Callable[..., Any] | type[Any]) -> inspect.Signature | None:
    """The parameters a job is called with: the function's, or those of the class's
    ``perform`` as the worker calls it on an instance (``self`` left out); None when Python
    cannot read them (a builtin)."""
    try:
        if not isinstance(target, type):
            return inspect.signature(target)
        job_class: type[Any] = target
        signature = inspect.signature(job_class.perform)
    except (TypeError, ValueError):
        return None
    if inspect.isfunction(inspect.getattr_static(target, "perform", None)):
        return signature.replace(parameters=list(signature.parameters.values())[1:])
    return signature  # a static or class method: no self to leave out


class CallSignature:
    """The parameters of one job, and how a call's arguments become the stored ``args``."""

    __slots__ = ("_fewest", "_job", "_most", "_positional", "_signature", "_var_positional")

    def __init__(self, job: str, signature: inspect.Signature | None) -> None:
        """``signature``: the job's parameters (``self`` left out), or None when Python
        cannot read them (a builtin); then only positional arguments are accepted, unchecked.
        Raises :class:`JobDefinitionError` for a keyword-only parameter or ``**kwargs``."""
        self._job = job
        self._signature = signature
        params = list(signature.parameters.values()) if signature is not None else []
        _refuse_keyword_only(job, params)
        self._positional = [p for p in params if p.kind in _POSITIONAL]
        star = [p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL]
        self._var_positional = star[0] if star else None
        required = [p for p in self._positional if p.default is inspect.Parameter.empty]
        self._fewest = len(required) if signature is not None else 0
        unbounded = signature is None or self._var_positional is not None
        self._most = float("inf") if unbounded else len(self._positional)

    @classmethod
    def of(cls, job: str, target: Callable[..., Any] | type[Any]) -> CallSignature:
        """The call signature of a job function or ``Job`` subclass named ``job``."""
        return cls(job, signature_of(target))

    def describe(self) -> str:
        """The parameters as Python shows them, without annotations: ``(a, b, c=0)``."""
        if self._signature is None:
            return "(*args) (its signature cannot be read)"
        empty = inspect.Parameter.empty
        plain = [p.replace(annotation=empty) for p in self._signature.parameters.values()]
        return str(self._signature.replace(parameters=plain, return_annotation=empty))

    def positional(self, args: Sequence[Any], kwargs: Mapping[str, Any], *,
                   shown: str | None = None) -> Sequence[Any]:
        """``args`` and ``kwargs`` laid out as the positional arguments to store.

        Raises :class:`JobCallError` when they do not bind to the job's parameters (a
        missing or extra argument, an unknown keyword); ``shown`` is how the error shows
        them (default: as the call was written).
        """
        if not kwargs and self._fewest <= len(args) <= self._most:
            return args  # the common call, checked without binding
        if self._signature is None:
            raise self._error(args, kwargs, shown, "its signature cannot be read, so keyword "
                              "arguments cannot be put at their positions; pass them "
                              "positionally")
        try:
            given = self._signature.bind(*args, **kwargs).arguments
        except TypeError as exc:
            raise self._error(args, kwargs, shown, str(exc)) from None
        last = max((i for i, p in enumerate(self._positional) if p.name in given), default=-1)
        laid_out = [given.get(p.name, p.default) for p in self._positional[: last + 1]]
        if self._var_positional is not None:
            laid_out.extend(given.get(self._var_positional, ()))
        return laid_out

    def positional_each(self, args_list: Iterable[Sequence[Any]]) -> list[list[Any]]:
        """``push_bulk``: each item's positional arguments as a list, checked like those
        of :meth:`positional`; the :class:`JobCallError` names the item's index."""
        laid_out: list[list[Any]] = []
        for index, args in enumerate(args_list):
            if self._fewest <= len(args) <= self._most:
                laid_out.append(list(args))
            else:
                shown = f"args_list[{index}] = {list(args)!r}"
                laid_out.append(list(self.positional(args, {}, shown=shown)))
        return laid_out

    def _error(self, args: Sequence[Any], kwargs: Mapping[str, Any], shown: str | None,
               problem: str) -> JobCallError:
        if shown is None:
            written = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
            shown = f"the call ({', '.join(written)})"
        if len(shown) > _SHOWN_LIMIT:
            shown = shown[:_SHOWN_LIMIT] + "..."
        return JobCallError(self._job, self.describe(), shown, problem)


def _refuse_keyword_only(job: str, params: list[inspect.Parameter]) -> None:
    keyword = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if keyword:
        names = ", ".join(p.name for p in keyword)
        raise JobDefinitionError(
            f"job {job!r} has keyword-only parameters ({names}), which a job cannot take: "
            "its arguments are stored as one positional list (what Sidekiq and Ruby workers "
            "read), so keyword arguments are put at their parameter's position. Make them "
            "ordinary parameters (remove the bare '*' or move them before '*args')")
    star = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    if star:
        raise JobDefinitionError(
            f"job {job!r} takes **{star[0].name}, which a job cannot: its arguments are "
            "stored as one positional list (what Sidekiq and Ruby workers read), so every "
            "argument needs a position. Name the parameters, or take one dict parameter")
