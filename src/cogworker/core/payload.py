"""The job payload: the JSON object stored in Redis, as the original defines it.

Raw payloads (the exact stored string) are opaque: removal in Redis matches bytes, so a raw
string is never re-serialized to find it again. New payloads are always built here, on the
client side, never inside Lua.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from cogworker.core.errors import JobArgumentError, PayloadError

Payload = dict[str, Any]

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY_ATTEMPTS = 25
ERROR_MESSAGE_LIMIT = 10_000
RAW_PAYLOAD_LIMIT = 100_000
UNPARSEABLE_CLASS = "(unparseable)"
RELATIVE_TIME_LIMIT = 1_000_000_000  # perform_in/at: below this a number is "seconds from now"

_JSON_HINT = {
    "datetime": "pass an ISO-8601 string (dt.isoformat()) or epoch seconds (dt.timestamp())",
    "date": "pass an ISO-8601 string (d.isoformat())",
    "set": "pass a list (sorted(values))",
    "frozenset": "pass a list (sorted(values))",
    "tuple": "pass a list: JSON has no tuples, and the job would receive a list",
    "bytes": "pass a str (decode it, or base64-encode binary data)",
    "Decimal": "pass a str (str(value)) to keep every digit, or a float",
    "UUID": "pass a str (str(value))",
    "float": "pass a finite number or None: JSON cannot hold NaN or infinity",
}


def new_jid() -> str:
    """A new job id: 12 random bytes as 24 lowercase hex characters."""
    return os.urandom(12).hex()  # what secrets.token_hex(12) does, one call shorter


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# json's C encoder, built once: JSONEncoder.encode builds one (and a closure) on every call,
# which was a tenth of perform_async. No circular check (markers=None): arguments and
# options are checked to be plain JSON before they get here.
_MAKE_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = _MAKE_C_ENCODER and _MAKE_C_ENCODER(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
)


def dumps(obj: Any) -> str:
    """Compact JSON matching the Ruby generator (no spaces, UTF-8 kept, no NaN)."""
    if _C_ENCODE is None:
        return _ENCODER.encode(obj)  # an interpreter without the C accelerator
    return "".join(_C_ENCODE(obj, 0))


def check_json_args(job_name: str, args: Sequence[Any]) -> list[Any]:
    """Return ``args`` as a list, or raise :class:`JobArgumentError` naming the bad one.

    Only plain JSON travels: None, bool, int, finite float, str, list and dict with str
    keys. Nothing is coerced, so what the job receives equals what was passed.
    """
    checked = list(args)
    for index, value in enumerate(checked):
        _check_value(job_name, f"#{index + 1}", value)
    return checked


def _check_value(job_name: str, position: str, value: Any) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if math.isfinite(value):
            return
        raise JobArgumentError(job_name, position, value, _JSON_HINT["float"])
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_value(job_name, f"{position}[{index}]", item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise JobArgumentError(
                    job_name,
                    f"{position} key {key!r}",
                    key,
                    "dict keys must be str (JSON object keys are strings)",
                )
            _check_value(job_name, f"{position}[{key!r}]", item)
        return
    hint = _JSON_HINT.get(type(value).__name__, "pass only None, bool, int, float, str, "
                          "list and dict with str keys (convert the object to one of them)")
    raise JobArgumentError(job_name, position, value, hint)


def normalize(item: Mapping[str, Any], now: float | None = None) -> Payload:
    """Fill in what a stored payload needs: jid, queue, retry, created_at, args list."""
    if "class" not in item or not isinstance(item["class"], str) or not item["class"]:
        raise PayloadError("a job payload needs a non-empty string 'class'", repr(item))
    job = {str(k): v for k, v in item.items()}
    job["args"] = check_json_args(job["class"], job.get("args") or [])
    return complete(job, time.time() if now is None else now)


def complete(job: Payload, now: float) -> Payload:
    """Fill in, in place, what ``job`` (class and checked args set) lacks: queue, jid,
    retry and created_at. Raises :class:`PayloadError` for a queue that is not a name."""
    queue = job.setdefault("queue", DEFAULT_QUEUE)
    if not queue or not isinstance(queue, str):
        raise PayloadError(f"queue must be a non-empty string, not {queue!r}", repr(job))
    if not job.get("jid"):
        job["jid"] = new_jid()
    if job.get("retry") is None:
        job["retry"] = True
    job.setdefault("created_at", now)
    return job


def resolve_at(when: float, now: float) -> float:
    """``perform_in``/``perform_at``: a small number is relative, a big one absolute."""
    return now + when if when < RELATIVE_TIME_LIMIT else float(when)


def encode(job: Mapping[str, Any]) -> str:
    """Serialize a payload; a non-JSON value raises :class:`JobArgumentError`."""
    try:
        return dumps(job)
    except (TypeError, ValueError, RecursionError) as exc:
        name = str(job.get("class", "?"))
        for key, value in job.items():
            if key != "args":
                _check_value(name, f"option {key!r}", value)
        raise JobArgumentError(name, "payload", job, str(exc)) from exc


def decode(raw: bytes | str) -> Payload:
    """Parse a raw payload; anything that is not a job object raises :class:`PayloadError`."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        job = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PayloadError(f"not JSON: {exc}", raw) from exc
    if not isinstance(job, dict):
        raise PayloadError(f"not a JSON object but a {type(job).__name__}", raw)
    queue = job.get("queue")
    if not isinstance(queue, str) or not queue:
        raise PayloadError("the payload has no queue name", raw)
    return job


def max_retries(retry: Any) -> int:
    """How many retries the ``retry`` option allows after the first failure."""
    if retry is None or retry is True:
        return DEFAULT_MAX_RETRY_ATTEMPTS
    if retry is False:
        return 0
    if isinstance(retry, int):
        return max(retry, 0)
    if isinstance(retry, float):
        return max(int(retry), 0) if math.isfinite(retry) else 0
    if isinstance(retry, str):
        try:
            return max(int(retry.strip()), 0)
        except ValueError:
            return 0
    return 0


def error_message(exc: BaseException) -> str:
    """The exception's message as valid UTF-8, cut to :data:`ERROR_MESSAGE_LIMIT`."""
    try:
        text = str(exc)
    except Exception:
        text = f"#<{type(exc).__name__}>"
    return text.encode("utf-8", "replace").decode("utf-8")[:ERROR_MESSAGE_LIMIT]


def error_class(exc: BaseException) -> str:
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def unparseable_wrapper(
    raw: bytes | str, queue: str | None, reason: str, now: float, error_cls: str = "PayloadError"
) -> Payload:
    """Wrap bytes that are not a job so they can be buried in dead with their content.

    The content is scrubbed to valid UTF-8 (invalid bytes become U+FFFD), whether it comes
    as bytes or as text read with ``surrogateescape``: lone surrogates cannot be sent.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "replace")
    return {
        "class": UNPARSEABLE_CLASS,
        "args": [],
        "queue": queue,
        "jid": new_jid(),
        "retry": False,
        "retry_count": 0,
        "enqueued_at": now,
        "failed_at": now,
        "error_class": error_cls,
        "error_message": reason[:ERROR_MESSAGE_LIMIT],
        "raw_payload": text[:RAW_PAYLOAD_LIMIT],
    }


def is_terminal(job: Mapping[str, Any]) -> bool:
    """Whether the failure being recorded is the last one (the single shared predicate).

    ``retry_count`` here is the number of attempts *before* this failure.
    """
    outcome = job.get("failure_outcome")
    if outcome is not None:
        return bool(outcome != "retry")
    count = job.get("retry_count", 0)
    count = count if isinstance(count, int) else 0
    return count >= max_retries(job.get("retry"))
