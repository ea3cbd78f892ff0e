"""The Jinja2 environment (autoescaping always on) and the filters every template uses.

Nothing a job carries is trusted: arguments, class names, error messages and backtraces
reach the page only through autoescaped expressions; the helpers below build their markup
from escaped parts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    pass_context,
)
from jinja2.runtime import Context
from markupsafe import Markup, escape

from cogworker.__about__ import __version__

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def span(seconds: float | None) -> str:
    """A duration in its two largest units: ``45s``, ``3m 12s``, ``2h 5m``, ``3d 4h``."""
    if seconds is None:
        return "n/a"
    seconds = abs(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms" if seconds >= 0.001 else "0s"
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    parts = []
    rest = int(seconds)
    for unit, size in _UNITS:
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def relative(stamp: float | None, now: float | None = None) -> str:
    """``in 5m`` or ``3m ago`` (``n/a`` when unknown)."""
    if stamp is None:
        return "n/a"
    delta = stamp - (time.time() if now is None else now)
    if abs(delta) < 1:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(delta)} ago"


def number(value: int | float | None) -> str:
    """``12,345`` (``n/a`` when unknown)."""
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if isinstance(value, int) or float(value).is_integer() \
        else f"{value:,.1f}"


def milliseconds(value: float | None) -> str:
    """A duration in ms: ``0.4ms``, ``12ms``, ``3.2s`` (``n/a`` for none)."""
    if value is None:
        return "n/a"
    if value < 10:
        return f"{value:.1f}ms"
    if value < 1000:
        return f"{value:.0f}ms"
    return f"{value / 1000:.1f}s"


def megabytes(kilobytes: int | None) -> str:
    """Resident memory as ``123.4 MB`` (``n/a`` when unknown)."""
    return "n/a" if kilobytes is None else f"{kilobytes / 1024:.1f} MB"


def pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def percent(part: float, whole: float) -> float:
    """``part`` as a share of ``whole`` in 0 … 100 (for bars drawn with SVG attributes)."""
    if whole <= 0:
        return 0.0
    return max(0.0, min(100.0, part * 100.0 / whole))


def merged(state: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` with ``changes`` applied (for links that keep a page's filters)."""
    return {**state, **changes}


class Renderer:
    """Renders the dashboard's templates, then each tab's own template folder."""

    def __init__(self, time_format: str, extra_folders: Iterable[Path] = ()) -> None:
        loaders: list[Any] = [PackageLoader("cogworker.web", "templates")]
        loaders += [FileSystemLoader(str(folder)) for folder in extra_folders]
        self.time_format = time_format
        self.env = Environment(
            loader=ChoiceLoader(loaders), autoescape=True, undefined=StrictUndefined,
            trim_blocks=True, lstrip_blocks=True,
        )
        self.env.filters.update(span=span, relative=relative, number=number,
                                megabytes=megabytes, pretty_json=pretty_json,
                                ms=milliseconds)
        self.env.globals.update(icon=_icon, ts=self.timestamp, percent=percent,
                                now=time.time, merged=merged, version=__version__)

    def render(self, template: str, context: Mapping[str, Any]) -> str:
        return self.env.get_template(template).render(context)

    def timestamp(self, stamp: float | None, title: str | None = None) -> Markup:
        """A ``<time>`` in UTC that the page's script shows in the browser's time zone."""
        if stamp is None:
            return Markup('<span class="muted">n/a</span>')
        moment = datetime.fromtimestamp(stamp, tz=timezone.utc)
        iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        shown = moment.strftime(self.time_format) + " UTC"
        hint = escape(title if title is not None else relative(stamp))
        return Markup(f'<time datetime="{iso}" data-cw-time title="{hint}">'
                      f"{escape(shown)}</time>")


@pass_context
def _icon(context: Context, name: str, label: str | None = None) -> Markup:
    """An icon from the sprite; decorative unless ``label`` names it for screen readers."""
    prefix = escape(context.get("prefix", ""))
    aria = f'role="img" aria-label="{escape(label)}"' if label else 'aria-hidden="true"'
    return Markup(f'<svg class="icon" {aria} focusable="false"><use '
                  f'href="{prefix}/static/vendor/icons.svg#i-{escape(name)}"></use></svg>')
