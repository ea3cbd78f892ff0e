"""The job payload: the JSON object stored in Redis, as the original defines it.

Raw payloads (the exact stored string) are opaque: removal in Redis matches bytes, so a raw
string is never re-serialized to find it again. New payloads are always built here, on the
client side, never inside Lua.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cogworker.core.errors import JobArgumentError, JobArgumentShapeError, PayloadError

Payload = dict[str, Any]

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY_ATTEMPTS = 25
ERROR_MESSAGE_LIMIT = 10_000
UNPARSEABLE_CLASS = "(unparseable)"
MANUAL_RETRY = "manual_retry"
"""Set (``true``) on a job put back on its queue by hand from the dead set: its run is one
attempt beyond its budget, logged as "manual retry" instead of "attempt 6/4". Dropped from
the record of its failure."""
MAX_NESTING = 100
"""Levels of arrays and objects a payload may nest, its own object and ``args`` array
included: the default ``max_nesting`` of Ruby's ``JSON.parse``, so that every payload a
Python client stores, a Ruby worker can read. An argument may nest ``MAX_NESTING - 2``."""
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
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)


def dumps(obj: Any) -> str:
    """Compact JSON matching the Ruby generator (no spaces, UTF-8 kept, no NaN)."""
    if _C_ENCODE is None:
        return _ENCODER.encode(obj)  # an interpreter without the C accelerator
    return "".join(_C_ENCODE(obj, 0))


def check_json_args(job_name: str, args: Sequence[Any]) -> list[Any]:
    """Return ``args`` as a list, or raise :class:`JobArgumentError` naming the bad one.

    Only plain JSON travels: None, bool, int, finite float, str, list and dict with str
    keys, strings that UTF-8 can encode (no lone surrogates), nested at most
    :data:`MAX_NESTING` levels in the payload. Nothing is coerced, so what the job receives
    equals what was passed.
    """
    checked = list(args)
    for index, value in enumerate(checked):
        _check_value(job_name, f"#{index + 1}", value, _ARGUMENT_DEPTH)
    return checked


_ARGUMENT_DEPTH = 3  # an argument's own list or dict: inside the payload and its args
_OPTION_DEPTH = 2  # an option's list or dict: inside the payload object
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_value(job_name: str, position: str, value: Any, depth: int) -> None:
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, str):
        if not value.isascii():  # O(1): only non-ASCII text can hold a surrogate
            _check_text(job_name, position, value)
        return
    if isinstance(value, float):
        if math.isfinite(value):
            return
        raise JobArgumentError(job_name, position, value, _JSON_HINT["float"])
    if isinstance(value, (list, dict)) and depth > MAX_NESTING:
        raise JobArgumentShapeError(
            job_name, position if len(position) <= 60 else position[:60] + "...", value,
            f"nests lists and dicts deeper than a payload may ({MAX_NESTING} levels with the "
            f"payload and its args, so {MAX_NESTING - 2} inside an argument; a Ruby worker "
            "cannot read more)", "flatten it, or pass it as one JSON string (json.dumps)")
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_value(job_name, f"{position}[{index}]", item, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise JobArgumentError(job_name, f"{position} key {key!r}", key,
                                       "dict keys must be str (JSON object keys are strings)")
            if not key.isascii():
                _check_text(job_name, f"{position} key {key!r}", key)
            _check_value(job_name, f"{position}[{key!r}]", item, depth + 1)
        return
    hint = _JSON_HINT.get(type(value).__name__, "pass only None, bool, int, float, str, "
                          "list and dict with str keys (convert the object to one of them)")
    raise JobArgumentError(job_name, position, value, hint)


def _check_text(job_name: str, position: str, text: str) -> None:
    """A str UTF-8 cannot encode (a lone surrogate, e.g. from ``surrogateescape``) is refused."""
    found = _SURROGATE.search(text)
    if found is not None:
        raise JobArgumentShapeError(
            job_name, position, text,
            f"holds a lone surrogate ({found.group()!r} at index {found.start()}), which "
            "UTF-8 cannot encode",
            "decode bytes strictly (bytes.decode('utf-8')), or base64-encode binary data")


def normalize(item: Mapping[str, Any], now: float | None = None) -> Payload:
    """Fill in what a stored payload needs: jid, queue, retry, created_at, args list."""
    if "class" not in item or not isinstance(item["class"], str) or not item["class"]:
        raise PayloadError("a job payload needs a non-empty string 'class'", repr(item))
    job = {str(k): v for k, v in item.items()}
    job["args"] = check_json_args(job["class"], job.get("args") or [])
    return complete(job, time.time() if now is None else now)


def complete(job: Payload, now: float) -> Payload:
    """Fill in, in place, what ``job`` (class and checked args set) lacks: queue, jid,
    retry, created_at, and ``expires_at`` from ``expires_in``. Raises
    :class:`PayloadError` for a queue that is not a name or a job that would expire before
    it is due."""
    queue = job.setdefault("queue", DEFAULT_QUEUE)
    if not queue or not isinstance(queue, str):
        raise PayloadError(f"queue must be a non-empty string, not {queue!r}", repr(job))
    if not job.get("jid"):
        job["jid"] = new_jid()
    if job.get("retry") is None:
        job["retry"] = True
    job.setdefault("created_at", now)
    if "expires_in" in job or "expires_at" in job:
        stamp_expiry(job, now)
    return job


def stamp_expiry(job: Payload, now: float) -> None:
    """Turn ``expires_in`` into the absolute ``expires_at`` (counted from when the job is
    due: its ``at``, or now), and refuse a job that would expire before it is due."""
    due = job.get("at")
    due = float(due) if isinstance(due, int | float) and not isinstance(due, bool) else now
    expires_in = job.pop("expires_in", None)
    if "expires_at" not in job and expires_in is not None:
        job["expires_at"] = due + float(expires_in)
    expires_at = job["expires_at"]
    if isinstance(expires_at, bool) or not isinstance(expires_at, int | float):
        raise PayloadError(f"job {job.get('class')!r}: expires_at must be epoch seconds, "
                           f"not {expires_at!r}", repr(job))
    if expires_at <= due:
        raise PayloadError(
            f"job {job.get('class')!r} would expire at {expires_at!r}, before it is due at "
            f"{due!r}, so it could never run; give a later expires_at or a longer expires_in",
            repr(job))


def resolve_at(when: float, now: float) -> float:
    """``perform_in``/``perform_at``: a small number is relative, a big one absolute."""
    return now + when if when < RELATIVE_TIME_LIMIT else float(when)


def encode(job: Mapping[str, Any]) -> str:
    """Serialize a payload; a non-JSON value raises :class:`JobArgumentError`."""
    try:
        return dumps(job)
    except Exception as exc:  # TypeError, ValueError, RecursionError: name the culprit
        name = str(job.get("class", "?"))
        for key, value in job.items():
            if key != "args":
                _check_value(name, f"option {key!r}", value, _OPTION_DEPTH)
        raise JobArgumentError(name, "payload", job, str(exc)) from exc


def decode(raw: bytes | str) -> Payload:
    """Parse a raw payload; anything that is not a job raises :class:`PayloadError`.

    A job is a JSON object (no NaN or Infinity) in UTF-8 (text read with
    ``surrogateescape`` must hold no escaped byte), nested at most :data:`MAX_NESTING`
    levels, with no lone ``\\uD800``-``\\uDFFF`` escape in a string, whose ``class`` and
    ``queue`` are non-empty strings, whose ``args`` (when given) is a list and whose
    ``jid`` (when given) is a non-empty string. Any failure of the parser itself (a
    ``RecursionError`` on deep nesting included) is a :class:`PayloadError`.
    """
    text = _utf8_text(raw)
    job = _parsed(text, raw)
    if not isinstance(job, dict):
        raise PayloadError(f"not a JSON object but a {type(job).__name__}", raw)
    queue = job.get("queue")
    if not isinstance(queue, str) or not queue:
        raise PayloadError("the payload has no queue name", raw)
    problem = _shape_problem(job, text)
    if problem is not None:
        raise PayloadError(problem, raw)
    return job


def _parsed(text: str, raw: bytes | str) -> Any:
    """``text``'s JSON value: from the C scanner when nothing surrounds it (as cogworker
    writes payloads), else (errors included) by the decoder's own path, which says why."""
    try:
        value, end = _SCAN(text, 0)
        if end == len(text):
            return value
    except Exception:  # StopIteration, ValueError, RecursionError: the decoder says which
        pass
    try:
        return _DECODER.decode(text)
    except Exception as exc:  # ValueError, RecursionError, MemoryError: all unreadable
        raise PayloadError(f"not JSON: {type(exc).__name__}: {exc}", raw) from exc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (a payload holding it cannot be stored again)")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""json.loads's own C decoder, except that NaN and Infinity are refused, as Ruby's
JSON.parse refuses them."""
_SCAN: Callable[[str, int], tuple[Any, int]] = vars(_DECODER)["scan_once"]  # its C scanner
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _utf8_text(raw: bytes | str) -> str:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(f"not UTF-8: {exc}", raw) from exc
    if not raw.isascii():
        found = _SURROGATE.search(raw)
        if found is not None:  # bytes that are not UTF-8, kept by surrogateescape
            raise PayloadError(f"not UTF-8: an invalid byte at position {found.start()}", raw)
    return raw


def _shape_problem(job: Payload, text: str) -> str | None:
    """Why a parsed object is not a job that can run and be recorded, or None."""
    if text.count("[") + text.count("{") > MAX_NESTING and _nesting(job) > MAX_NESTING:
        return f"nested deeper than {MAX_NESTING} levels"
    job_class, args, jid = job.get("class"), job.get("args", []), job.get("jid", "x")
    if not isinstance(job_class, str) or not job_class:
        return f"'class' must be a non-empty string naming the job, not {_shown(job_class)}"
    if not isinstance(args, list):
        return f"'args' must be a list, not {_shown(args)}"
    if not isinstance(jid, str) or not jid:
        return f"'jid' must be a non-empty string, not {_shown(jid)}"
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _holds_lone_surrogate(job):
        return ("a string holds a lone surrogate (a \\uD8xx-\\uDFxx escape), which UTF-8 "
                "cannot encode")
    return None


def _shown(value: Any) -> str:
    if value is None:
        return "null (or missing)"
    if isinstance(value, (str, int, float)):
        return f"{value!r:.80}"
    return f"a JSON {'object' if isinstance(value, dict) else 'array'}"


def _nesting(value: Any) -> int:
    """How many levels of lists and dicts ``value`` nests (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (list, dict)))
    return deepest


def _holds_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


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

    The exact bytes are kept, whatever their size: ``raw_payload`` holds them as text when
    they are UTF-8; otherwise ``raw_payload`` holds a readable copy (each invalid byte
    replaced by U+FFFD) and ``raw_payload_base64`` the exact bytes. Text read with
    ``surrogateescape`` counts as the bytes it came from.
    """
    data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
    wrapper: Payload = {
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
    }
    try:
        wrapper["raw_payload"] = data.decode("utf-8")
    except UnicodeDecodeError:
        wrapper["raw_payload"] = data.decode("utf-8", "replace")
        wrapper["raw_payload_base64"] = base64.b64encode(data).decode("ascii")
    return wrapper


def raw_payload_bytes(wrapper: Mapping[str, Any]) -> bytes | None:
    """The exact bytes an unparseable wrapper keeps, or None when it keeps none."""
    encoded = wrapper.get("raw_payload_base64")
    if isinstance(encoded, str):
        try:
            return base64.b64decode(encoded, validate=True)
        except ValueError:
            return None
    text = wrapper.get("raw_payload")
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else None


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
