"""A cache of the ``cogworker`` entry-point scan, valid while the installed set is unchanged.

``importlib.metadata.entry_points()`` reads the ``entry_points.txt`` of every installed
distribution and parses the metadata of those it keeps: tens of milliseconds in an ordinary
environment, paid by the first push of every short-lived process. The result depends only
on the distributions found on ``sys.path``, so it is kept in a small JSON file, one scan
per ``sys.path`` (each script's folder comes first on it), used while:

* the interpreter (``sys.version``, ``sys.prefix``) and the ``sys.path`` entries, in order,
  are the same;
* each entry's modification time is the same, or, where it changed (a script's folder
  where files come and go), its distribution folders (``*.dist-info``, ``*.egg-info``) are
  the same names with the same times: an installer adds, removes or replaces such a folder
  (a reinstall of the same version makes a new one); a zip file must keep its time and size;
* the folder, ``entry_points.txt`` and metadata file of every distribution that provided
  an entry point are as they were (time and size), so a file rewritten in place (an
  egg-info regenerated in a checkout) is seen too.

That costs a ``stat`` per path entry and a few per plugin distribution, against reading
every distribution's files. What it cannot see is a file edited in place that *adds* the
group to a distribution that had none, with nothing created or removed beside it: no
installer does that; after such a hand edit, run once with ``COGWORKER_CACHE_DIR=off``.

A time less than :data:`RACY_SECONDS` old is never trusted (a file changed twice within
one tick of the file system's clock could keep its time): such an entry is listed again
next time, and a scan that read plugin files that young is not stored. The cache is
skipped when a finder other than the standard path finder can supply distributions, when
``importlib.metadata.entry_points`` was replaced (a test's fake), or when a distribution's
folder is not known; a failure to read or write the file falls back to the
scan. ``COGWORKER_CACHE_DIR`` moves the folder (default: ``$XDG_CACHE_HOME/cogworker``,
else ``~/.cache/cogworker``; ``%LOCALAPPDATA%`` on Windows); ``off`` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from cogworker.core.value_record import ValueRecord

CACHE_DIR_ENV = "COGWORKER_CACHE_DIR"
DISABLED = "off"
FORMAT = 5
"""Bumped whenever the file's layout changes: an older file is then simply a miss."""
RACY_SECONDS = 2.0
KEPT_KEYS = 8
"""Scans kept per interpreter: each script's folder comes first on ``sys.path``, so a
project's scripts, its CLI and its tests each have a key of their own."""
_DIST_FILES = ("", "entry_points.txt", "METADATA", "PKG-INFO")  # "": the folder itself
_DIST_SUFFIXES = (".dist-info", ".egg-info")

Stamp = tuple[int, int]
"""(modification time in ns, size) of a file, (-1, -1) when it is missing."""


class EntryPointRecord(ValueRecord):
    """One entry point as the scan found it; ``folder`` is its distribution's metadata
    folder (``*.dist-info``, ``*.egg-info``), None when it is not known. Kept in the
    cache file as the list of its values."""

    _fields = ("name", "value", "distribution", "version", "folder")
    __slots__ = _fields
    name: str
    value: str
    distribution: str
    version: str
    folder: str | None

    def __init__(self, name: str, value: str, distribution: str, version: str,
                 folder: str | None) -> None:
        super().__init__(name, value, distribution, version, folder)


def cached_scan(group: str, environ: Mapping[str, str] = os.environ) -> list[EntryPointRecord]:
    """:func:`scan`'s records for ``group``, from the cache while the environment is
    unchanged."""
    folder = cache_dir(environ)
    if folder is None or _other_distribution_finders() or _entry_points_replaced():
        return scan(group)
    path = folder / f"entry-points-{_digest(FORMAT, sys.executable, sys.prefix, group)}.json"
    key = _digest(sys.version, sys.prefix, *sys.path)
    kept = _read(path)
    saved = kept.get(key)
    entries = _current_entries(sys.path, saved)
    cached = _valid(saved) if entries is not None else None
    if cached is not None and entries is not None:
        moved = [state for state, before in zip(entries, saved["entries"],  # type: ignore[index]
                                                strict=True) if state != before]
        if any(folders != _NO_FOLDERS for _stamp, folders in moved):  # spare their stats
            _write(path, key, {**saved, "entries": entries}, kept)  # type: ignore[dict-item]
        return cached
    started = time.time_ns()
    entries = [_entry_state(entry or ".", started) for entry in sys.path]
    records = scan(group)
    folders = {record.folder for record in records}
    if None in folders:
        return records  # a distribution whose files cannot be checked: not cached
    members = {name: _stamps(name) for name in sorted(f for f in folders if f is not None)}
    newest = max((mtime for by_file in members.values() for mtime, _ in by_file), default=0)
    if newest < started - RACY_SECONDS * 1e9:
        scan_data = {"entries": entries, "members": members,
                     "entry_points": [list(record.values()) for record in records]}
        _write(path, key, scan_data, kept)
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


EntryState = list[object]
"""``[stamp or None, digest of its distribution folders' names and stamps or None]`` of
one ``sys.path`` entry, as JSON keeps it: None where it was too young to be trusted."""


def _entry_state(entry: str, now: int) -> EntryState:
    """The state of ``entry`` as :data:`EntryState` says, at ``now`` (ns)."""
    limit = now - RACY_SECONDS * 1e9
    stamp = _stamp(entry)
    folders = _dist_folders(entry)
    young = any(mtime >= limit for _name, (mtime, _size) in folders)
    # a folder that young may change again unseen: None makes the next process scan
    return [list(stamp) if stamp[0] < limit else None,
            None if young else _digest(*(item for pair in folders for item in pair))]


def _dist_folders(entry: str) -> list[tuple[str, Stamp]]:
    """Each ``*.dist-info`` / ``*.egg-info`` folder of ``entry`` with its stamp, by name
    ([] for a file or a missing entry)."""
    try:
        with os.scandir(entry) as children:
            names = [child.name for child in children if child.name.endswith(_DIST_SUFFIXES)]
    except OSError:  # a zip file, or missing: its own stamp decides
        return []
    return [(name, _stamp(os.path.join(entry, name))) for name in sorted(names)]


def _current_entries(path: Sequence[str], saved: object) -> list[EntryState] | None:
    """The saved entry states, refreshed where an entry's time moved on without a change
    to its distribution folders; None when a distribution may have come, gone or changed."""
    try:
        states: list[EntryState] = list(saved["entries"])  # type: ignore[index]
    except (TypeError, KeyError):
        return None
    if len(states) != len(path):
        return None
    now = time.time_ns()
    for index, entry in enumerate(path):
        trusted, folders = states[index]
        stamp = _stamp(entry or ".")
        if trusted is not None and list(stamp) == trusted:
            continue
        if not os.path.isdir(entry or "."):
            return None
        state = _entry_state(entry or ".", now)
        if folders is None or state[1] != folders:
            return None
        states[index] = state
    return states


def _entry_points_replaced() -> bool:
    """True when something (a test, a tool) put its own ``entry_points`` in place: it
    decides the plugins then, and a cached scan would hide it."""
    return importlib.metadata.entry_points is not _ENTRY_POINTS


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


def _write(path: Path, key: str, scan_data: Mapping[str, object],
           kept: Mapping[str, object]) -> None:
    scans: dict[str, object] = {key: scan_data}
    scans.update((other, data) for other, data in list(kept.items())[:KEPT_KEYS - 1]
                 if other != key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump({"format": FORMAT, "scans": scans}, file)
            os.replace(temporary, path)  # readers see the old file or the new, never half
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass  # a read-only home: every process scans, as without a cache


_NO_FOLDERS = _digest()  # an entry without distributions (a script's folder, mostly)
_ENTRY_POINTS = importlib.metadata.entry_points
