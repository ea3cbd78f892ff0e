"""Checking a workflow's steps where it is written: signatures of one app, each fitting
its job for its place."""

from __future__ import annotations

from collections.abc import Sequence

from cogworker.core.errors import JobCallError
from cogworker.core.signatures import Signature
from cogworker.workflows.errors import WorkflowError


def check_steps(steps: Sequence[object], what: str) -> list[Signature]:
    """The steps as signatures of one app; :class:`WorkflowError` otherwise."""
    if not steps:
        raise WorkflowError(f"a {what} needs at least one step: {what}(job.s(...), ...)")
    signatures: list[Signature] = []
    for index, item in enumerate(steps):
        if not isinstance(item, Signature):
            raise WorkflowError(f"step {index + 1} of the {what} is {item!r:.100}, not a "
                                "signature: write job.s(...) or job.si(...)")
        signatures.append(item)
    check_one_app(signatures, what)
    return signatures


def check_one_app(signatures: Sequence[Signature], what: str) -> None:
    """:class:`WorkflowError` unless every signature is a job of one app."""
    if any(signature.host is not signatures[0].host for signature in signatures):
        raise WorkflowError(f"the steps of a {what} must be jobs of one app")


def laid_out_at(signature: Signature, index: int, what: str, *,
                with_result: bool) -> list[object]:
    """The step's stored arguments at place ``index``; the error names the place."""
    try:
        return signature.laid_out(with_result=with_result)
    except JobCallError as exc:
        raise JobCallError(exc.job, exc.signature, f"step {index + 1} of the {what}, "
                           f"{exc.arguments}", exc.problem) from None
