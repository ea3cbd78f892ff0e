"""What a supervised child learns from its supervisor, and what every process tells of itself.

The supervisor starts each child with three environment variables: its own identity (the
child's presence record names it under ``supervisor``, which groups the children in the
process list), the random part of the child's identity, and the child's slot (0 to N-1
under ``-P N``; a replacement takes the slot of the child it replaces, so it is pinned to
the same CPU under ``cpu_affinity``). The child's identity is then
``<hostname>:<child pid>:<that part>``, which the supervisor knows from the moment it
started the child, so it can recover that child's jobs even if the child died before its
first beat. :func:`adopt` reads them once, at the start of ``cogworker run``, and removes
them from the environment, so a process a job starts does not pass for a child.

Every process also reports its host's **boot id** (Linux: ``/proc/sys/kernel/random/
boot_id``): with the host name it tells apart two hosts of one name (containers on one
kernel differ in host name, one machine after a reboot differs in boot id), which is what
start-up recovery (:mod:`.host_recovery`) needs before trusting a pid.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

SUPERVISOR_ENV: Final = "COGWORKER_SUPERVISOR"
IDENTITY_SUFFIX_ENV: Final = "COGWORKER_IDENTITY_SUFFIX"
SLOT_ENV: Final = "COGWORKER_SLOT"
BOOT_ID_FILE: Final = Path("/proc/sys/kernel/random/boot_id")
_SUFFIX = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class Lineage:
    """A supervised child's link to its supervisor."""

    supervisor: str
    identity_suffix: str
    parent_pid: int
    """The supervisor's pid, as this process's parent when it adopted the lineage."""
    slot: int = 0
    """The child's slot under its supervisor (0 to N-1 under ``-P N``)."""


_adopted: Lineage | None = None


def new_identity_suffix() -> str:
    """The random part of an identity: 12 lowercase hex digits."""
    return secrets.token_hex(6)


def child_environment(supervisor: str, identity_suffix: str, slot: int) -> dict[str, str]:
    """The variables a supervisor passes to the child it starts in ``slot``."""
    return {SUPERVISOR_ENV: supervisor, IDENTITY_SUFFIX_ENV: identity_suffix,
            SLOT_ENV: str(slot)}


def adopt(environ: dict[str, str] | None = None) -> Lineage | None:
    """Read (and remove) the supervisor's variables; None when not started by one.

    A malformed suffix is ignored (the process then makes its own): a stray variable must
    not give two processes one identity. A missing or malformed slot reads as slot 0.
    """
    global _adopted
    env = os.environ if environ is None else environ
    supervisor = env.pop(SUPERVISOR_ENV, "")
    suffix = env.pop(IDENTITY_SUFFIX_ENV, "")
    slot_text = env.pop(SLOT_ENV, "")
    if supervisor and _SUFFIX.fullmatch(suffix):
        slot = int(slot_text) if slot_text.isascii() and slot_text.isdigit() else 0
        _adopted = Lineage(supervisor, suffix, os.getppid(), slot)
    return _adopted


def current() -> Lineage | None:
    """The lineage :func:`adopt` found in this process, if any."""
    return _adopted


def slot() -> int:
    """This process's slot under its supervisor; 0 for a process started on its own."""
    return _adopted.slot if _adopted is not None else 0


def identity_suffix() -> str:
    """This process's identity suffix: the supervisor's choice for a child, else random."""
    return _adopted.identity_suffix if _adopted is not None else new_identity_suffix()


def boot_id(path: Path = BOOT_ID_FILE) -> str | None:
    """The kernel's boot id, or None where the system has none."""
    try:
        return path.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def process_facts() -> dict[str, Any]:
    """What the presence record adds about this process: its host's boot id, and the
    identity of its supervisor (None for a process started on its own)."""
    return {"boot_id": boot_id(),
            "supervisor": _adopted.supervisor if _adopted is not None else None}
