"""Small immutable records: a plain class over ``__slots__``, equal, hashable, shown and
pickled by its fields.

The classes of the plugins' option and spec records and of the plugin catalog are
created when their modules are imported, which happens at every process's first push.
Creating a ``typing.NamedTuple`` class costs about ten times a plain class (each field's
annotation is compiled on its own, then ``collections.namedtuple`` compiles a ``__new__``
from source): 0.87 million instructions for four fields, against 0.08 million for this
(cachegrind; ``docs/explanation/performance.md``), and eleven were created at each first
push. A record here keeps what those records were used for: reading fields by name,
value equality and hashing, a ``Name(field=value)`` repr, immutability, pickling. It is
not a tuple: it cannot be indexed or unpacked.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ValueRecord:
    """Base of a record whose fields are the names of its ``_fields``, in order.

    A subclass declares its fields' names in order as ``_fields`` and as ``__slots__``
    (``__slots__ = _fields``), their annotations, and a typed ``__init__`` taking the
    fields in that order, which calls ``super().__init__`` with them.
    """

    _fields: ClassVar[tuple[str, ...]] = ()
    __slots__ = ()

    def __init__(self, *values: object) -> None:
        if len(values) != len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} values "
                            f"({', '.join(self._fields)}), not {len(values)}")
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def values(self) -> tuple[Any, ...]:
        """The fields' values, in the order of ``_fields``."""
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: {name!r} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: {name!r} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, ValueRecord)  # for the type checker: same type as self
        return self.values() == other.values()

    def __hash__(self) -> int:
        return hash((type(self), self.values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[type[ValueRecord], tuple[Any, ...]]:
        return type(self), self.values()
