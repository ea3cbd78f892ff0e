"""Reading a page's query parameters (clamped, never trusted) and paging through results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T", bound=str)

PER_PAGE_CHOICES = (10, 25, 50, 100)
MAX_QUERY_CHARS = 200


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    """The integer ``name`` clamped to ``low`` … ``high``; ``default`` when absent or bad."""
    raw = request.query_params.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        return default
    return max(low, min(value, high))


def choice_param(request: Request, name: str, choices: Sequence[T], default: T) -> T:
    """``name`` when it is one of ``choices``, else ``default``."""
    raw = request.query_params.get(name, "")
    for choice in choices:
        if raw == choice:
            return choice
    return default


def text_param(request: Request, name: str) -> str:
    """``name`` stripped and cut to 200 characters ('' when absent)."""
    return request.query_params.get(name, "").strip()[:MAX_QUERY_CHARS]


@dataclass(frozen=True)
class Pager:
    """Page numbers over ``total`` rows, ``per_page`` at a time (``page`` counts from 1)."""

    page: int
    per_page: int
    total: int

    @classmethod
    def from_request(cls, request: Request, total_hint: int | None, default_per_page: int
                     ) -> Pager:
        per_page = int_param(request, "per", default_per_page, 1, 200)
        page = int_param(request, "page", 1, 1, 10**9)
        return cls(page, per_page, total_hint or 0)

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def first_row(self) -> int:
        return min(self.offset + 1, self.total)

    @property
    def last_row(self) -> int:
        return min(self.offset + self.per_page, self.total)

    def window(self, around: int = 2) -> list[int | None]:
        """Page numbers to link: first, last and those near the current one (None = gap)."""
        wanted = {1, self.pages, *range(self.page - around, self.page + around + 1)}
        shown = sorted(n for n in wanted if 1 <= n <= self.pages)
        out: list[int | None] = []
        for number in shown:
            if out and out[-1] is not None and number - out[-1] > 1:
                out.append(None)
            out.append(number)
        return out
