"""ValueRecord: the plain slotted record the first push's option and catalog records use
instead of typing.NamedTuple classes (see cogworker/core/value_record.py)."""

from __future__ import annotations

import copy
import pickle

import pytest

from cogworker.core.plugins import CatalogEntry
from cogworker.core.value_record import ValueRecord
from cogworker.plugins.limits.options import LimitsOptions


class Point(ValueRecord):
    _fields = ("x", "label")
    __slots__ = _fields
    x: int
    label: str

    def __init__(self, x: int, label: str = "origin") -> None:
        super().__init__(x, label)


def test_fields_by_name_with_defaults_and_in_order() -> None:
    point = Point(3)

    assert (point.x, point.label) == (3, "origin")
    assert point.values() == (3, "origin")
    assert repr(point) == "Point(x=3, label='origin')"


def test_equal_and_hashed_by_value_and_type() -> None:
    assert Point(1, "a") == Point(1, "a")
    assert Point(1, "a") != Point(1, "b")
    assert len({Point(1, "a"), Point(1, "a"), Point(2, "a")}) == 2
    assert Point(1, "a") != (1, "a")  # not a tuple

    class Other(Point):
        __slots__ = ()

    assert Other(1, "a") != Point(1, "a")


def test_immutable() -> None:
    point = Point(1)
    with pytest.raises(AttributeError, match="Point is immutable: 'x' cannot be set"):
        point.x = 2
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del point.label
    with pytest.raises(AttributeError):
        point.other = 1  # slots: no new attribute either


def test_copied_and_pickled_by_its_fields() -> None:
    point = Point(5, "five")

    assert pickle.loads(pickle.dumps(point)) == point
    assert copy.copy(point) == point
    assert copy.deepcopy(point) == point


def test_a_wrong_number_of_values_names_the_fields() -> None:
    with pytest.raises(TypeError, match=r"Point takes 2 values \(x, label\), not 1"):
        ValueRecord.__init__(Point(0), 1)


def test_the_plugin_records_keep_their_field_order() -> None:
    assert LimitsOptions()._fields == ("lease", "max_reschedules", "backoff", "max_backoff",
                                       "jitter")
    entry = CatalogEntry("redis", "cogworker.redis.plugin", "cogworker", "1.0")
    assert entry.values() == ("redis", "cogworker.redis.plugin", "cogworker", "1.0", None,
                              "cogworker")
