"""A cache of the ``cogworker`` entry-point scan, valid while the installed set is unchanged.

``importlib.metadata.entry_points()`` reads the ``entry_points.txt`` of every installed
distribution and parses the metadata of those it keeps: tens of milliseconds in an ordinary
environment, paid by the first push of every short-lived process. The result depends only
on the distributions found on ``sys.path``, so it is kept in a small JSON file, used while:

* the interpreter (``sys.version``, ``sys.prefix``) and the ``sys.path`` entries, in order,
  are the same, and so is each entry's modification time (or a zip file's time and size):
  an installer adds or removes a ``*.dist-info`` folder there, which changes it, and an
  upgrade replaces the folder;
* the folder, ``entry_points.txt`` and metadata file of every distribution that provided
  an entry point are as they were (time and size), so a file rewritten in place (an
  egg-info regenerated in a checkout) is seen too.

Checking that costs one ``stat`` per path entry and a few per plugin distribution, against
reading every distribution's files. What it cannot see is a file edited in place that
*adds* the group to a distribution that had none, with nothing created or removed beside
it: no installer does that; after such a hand edit, run once with ``COGWORKER_CACHE_DIR=off``.

A key with a time less than :data:`RACY_SECONDS` old is never stored (a file changed twice
within one tick of the file system's clock could keep its time: a scan made while an
install is still writing is not kept). The cache is skipped when a finder other than the
standard path finder can supply distributions, or a distribution's folder is not known;
every failure to read or write the file falls back to the scan. ``COGWORKER_CACHE_DIR``
moves the folder (default: ``$XDG_CACHE_HOME/cogworker``, else ``~/.cache/cogworker``;
``%LOCALAPPDATA%`` on Windows); ``off`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

CACHE_DIR_ENV = "COGWORKER_CACHE_DIR"
DISABLED = "off"
FORMAT = 3
"""Bumped whenever the file's layout changes: an older file is then simply a miss."""
RACY_SECONDS = 2.0
KEPT_KEYS = 8
"""Scans kept per interpreter: each script's folder comes first on ``sys.path``, so a
project's scripts, its CLI and its tests each have a key of their own."""
_DIST_FILES = ("", "entry_points.txt", "METADATA", "PKG-INFO")  # "": the folder itself

Stamp = tuple[int, int]
"""(modification time in ns, size) of a file, (-1, -1) when it is missing."""


class EntryPointRecord(NamedTuple):
    """One entry point as the scan found it; ``folder`` is its distribution's metadata
    folder (``*.dist-info``, ``*.egg-info``), None when it is not known."""

    name: str
    value: str
    distribution: str
    version: str
    folder: str | None


def cached_scan(group: str, environ: Mapping[str, str] = os.environ) -> list[EntryPointRecord]:
    """:func:`scan`'s records for ``group``, from the cache while the environment is
    unchanged."""
    folder = cache_dir(environ)
    if folder is None or _other_distribution_finders():
        return scan(group)
    path = folder / f"entry-points-{_digest(FORMAT, sys.executable, sys.prefix, group)}.json"
    started = time.time_ns()
    key = path_key(sys.path)
    kept = _read(path)
    cached = _valid(kept.get(key.digest))
    if cached is not None:
        return cached
    records = scan(group)
    folders = {record.folder for record in records}
    if None in folders:
        return records  # a distribution whose files cannot be checked: not cached
    members = {name: _stamps(name) for name in sorted(f for f in folders if f is not None)}
    stamps = [stamp for by_file in members.values() for stamp in by_file] + key.stamps
    if max((mtime for mtime, _size in stamps), default=0) < started - RACY_SECONDS * 1e9:
        _write(path, key.digest, members, records, kept)
    return records


def scan(group: str) -> list[EntryPointRecord]:
    """Every entry point of ``group``, in ``importlib.metadata``'s order."""
    records: list[EntryPointRecord] = []
    # Each distribution's metadata is parsed once (dist.name and dist.version parse it on
    # every call); the distribution is kept in the value so that its id stays its own.
    described: dict[int, tuple[object, str, str, str | None]] = {}
    for entry_point in importlib.metadata.entry_points(group=group):
        dist = entry_point.dist
        if dist is None:
            distribution, version, folder = "(unknown distribution)", "-", None
        else:
            if id(dist) not in described:
                metadata = dist.metadata
                # PathDistribution keeps its folder only as _path; without one (another
                # kind of distribution) the scan is not cached
                path = getattr(dist, "_path", None)
                described[id(dist)] = (dist, metadata["Name"], metadata["Version"],
                                       str(path) if path is not None else None)
            _dist, distribution, version, folder = described[id(dist)]
        records.append(EntryPointRecord(entry_point.name, entry_point.value, distribution,
                                        version, folder))
    return records


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The cache folder, or None when ``COGWORKER_CACHE_DIR=off`` or no home is known."""
    configured = environ.get(CACHE_DIR_ENV, "").strip()
    if configured.lower() == DISABLED:
        return None
    if configured:
        return Path(configured)
    if os.name == "nt" and environ.get("LOCALAPPDATA"):
        return Path(environ["LOCALAPPDATA"]) / "cogworker" / "Cache"
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / "cogworker"
    home = environ.get("HOME") or environ.get("USERPROFILE")
    return Path(home) / ".cache" / "cogworker" if home else None


class PathKey(NamedTuple):
    """The interpreter, the path entries and their stamps, hashed (``digest``)."""

    digest: str
    stamps: list[Stamp]


def path_key(entries: Sequence[str]) -> PathKey:
    """The key of the distributions on ``entries`` (``sys.path``: ``""`` is the cwd)."""
    stamps = [_stamp(entry or ".") for entry in entries]
    return PathKey(_digest(sys.version, sys.prefix, *entries, *map(str, stamps)), stamps)


def _other_distribution_finders() -> bool:
    """True when a finder besides the standard path finder may supply distributions."""
    return any(hasattr(finder, "find_distributions")
               and finder is not importlib.machinery.PathFinder for finder in sys.meta_path)


def _stamp(path: str) -> Stamp:
    try:
        status = os.stat(path)
    except OSError:
        return (-1, -1)
    return (status.st_mtime_ns, status.st_size)


def _stamps(folder: str) -> list[Stamp]:
    return [_stamp(os.path.join(folder, name) if name else folder) for name in _DIST_FILES]


def _digest(*parts: object) -> str:
    text = "\0".join(map(str, parts))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _read(path: Path) -> dict[str, object]:
    """The kept scans by key, most recent first; {} when missing, unreadable or stale."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("format") == FORMAT:
            scans = data["scans"]
            return scans if isinstance(scans, dict) else {}
    except (OSError, ValueError, KeyError):
        pass
    return {}


def _valid(scan: object) -> list[EntryPointRecord] | None:
    """The records of a kept scan whose plugin distributions are unchanged, else None."""
    try:
        for folder, stamps in scan["members"].items():  # type: ignore[index]
            if _stamps(folder) != [tuple(stamp) for stamp in stamps]:
                return None  # a plugin's distribution was rewritten in place
        return [EntryPointRecord(*fields) for fields in scan["entry_points"]]  # type: ignore[index]
    except (TypeError, KeyError, AttributeError, ValueError):
        return None  # none kept (None), or malformed: the scan decides


def _write(path: Path, digest: str, members: Mapping[str, list[Stamp]],
           records: Iterable[EntryPointRecord], kept: Mapping[str, object]) -> None:
    import tempfile  # only a miss writes: kept off the path of a hit

    scans: dict[str, object] = {digest: {"members": members,
                                         "entry_points": [list(record)
                                                          for record in records]}}
    scans.update((key, scan) for key, scan in list(kept.items())[:KEPT_KEYS - 1]
                 if key != digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".entry-points-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump({"format": FORMAT, "scans": scans}, file)
            os.replace(temporary, path)  # readers see the old file or the new, never half
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass  # a read-only home: every process scans, as without a cache
