"""The ``cpu_affinity`` setting: its grammar, and which CPU a worker process takes.

Pure logic, no system calls: the settings rule checks the syntax with :func:`parse`, and
the worker's start-up step (:mod:`cogworker.worker.cpu_pinning`) asks :func:`choose_cpu`
for its CPU, given the set the operating system lets it run on.

Accepted values: ``"off"`` (the default: nothing is pinned), ``"auto"`` (choose from the
CPUs the process may run on, in ascending order) or a CPU list such as ``"0,2"`` or
``"0-3,6"`` (choose from it, in the order written). A process in slot *k* (a child of
``cogworker run -P N``; a lone process is slot 0) takes ``cpus[k % len(cpus)]``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from cogworker.core.value_record import ValueRecord

OFF: Final = "off"
AUTO: Final = "auto"
MAX_CPU: Final = 65535  # far above any kernel's CPU count; keeps "0-999999999" cheap to refuse
ACCEPTED: Final = (
    "off, auto, or a list of CPU numbers and low-high ranges such as 0,2 or 0-3,6 "
    f"(each CPU at most once, numbers from 0 to {MAX_CPU})"
)


class CpuListError(ValueError):
    """A ``cpu_affinity`` value that is not ``off``, ``auto`` or a valid CPU list."""


class CpuAffinity(ValueRecord):
    """A parsed ``cpu_affinity``: off, auto (``cpus`` empty) or the listed CPUs in the
    order written. A ValueRecord: the settings import this module with every process."""

    _fields = ("enabled", "cpus")
    __slots__ = _fields
    enabled: bool
    cpus: tuple[int, ...]

    def __init__(self, enabled: bool, cpus: tuple[int, ...] = ()) -> None:
        super().__init__(enabled, cpus)


def parse(value: str) -> CpuAffinity:
    """``value`` parsed; raises :class:`CpuListError` saying what is wrong with it."""
    text = value.strip().lower()
    if text == OFF:
        return CpuAffinity(enabled=False)
    if text == AUTO:
        return CpuAffinity(enabled=True)
    if not text:
        raise CpuListError("it is empty")
    cpus: list[int] = []
    for item in text.split(","):
        for cpu in _expand(item.strip()):
            if cpu in cpus:
                raise CpuListError(f"CPU {cpu} is listed twice")
            cpus.append(cpu)
    return CpuAffinity(enabled=True, cpus=tuple(cpus))


def _expand(item: str) -> range:
    low_text, dash, high_text = item.partition("-")
    low = _cpu_number(low_text.strip(), item)
    high = _cpu_number(high_text.strip(), item) if dash else low
    if high < low:
        raise CpuListError(f"the range {item!r} ends below where it starts")
    return range(low, high + 1)


def _cpu_number(text: str, item: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise CpuListError(f"{item!r} is not a CPU number or a low-high range")
    number = int(text)
    if number > MAX_CPU:
        raise CpuListError(f"CPU {number} is above {MAX_CPU}")
    return number


def is_valid(value: object) -> bool:
    """Whether ``value`` is a string :func:`parse` accepts (the settings rule's test)."""
    if not isinstance(value, str):
        return False
    try:
        parse(value)
    except CpuListError:
        return False
    return True


def outside(affinity: CpuAffinity, allowed: Collection[int]) -> tuple[int, ...]:
    """The listed CPUs this process may not run on (none for off and auto)."""
    return tuple(cpu for cpu in affinity.cpus if cpu not in allowed)


def choose_cpu(affinity: CpuAffinity, slot: int, allowed: Collection[int]) -> int:
    """The CPU for the process in ``slot``: from the list, or from ``allowed`` (sorted) for
    auto. ``affinity`` must be enabled and ``allowed`` non-empty."""
    if not affinity.enabled:
        raise ValueError("cpu_affinity is off: there is no CPU to choose")
    if slot < 0:
        raise ValueError(f"a slot is 0 or more, not {slot}")
    candidates = affinity.cpus or tuple(sorted(allowed))
    if not candidates:
        raise ValueError("the allowed CPU set is empty")
    return candidates[slot % len(candidates)]


def cpu_ranges(cpus: Collection[int]) -> str:
    """CPUs written compactly, as Linux does: ``{0, 1, 2, 5}`` → ``"0-2,5"``."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and spans[-1][1] == cpu - 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in spans)
