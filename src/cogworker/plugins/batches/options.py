"""The ``batches`` plugin's options (``plugin_options.batches.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cogworker.core.broker.batches import DEFAULT_BATCH_TTL
from cogworker.core.errors import ConfigurationError

PLUGIN_NAME = "batches"
OPTION_NAMES = ("ttl", "callback_queue")


@dataclass(frozen=True, slots=True)
class BatchesOptions:
    """``ttl``: seconds a batch's data lives after it completed or was cancelled (7 days);
    ``callback_queue``: where callbacks go when ``app.batch`` names no queue."""

    ttl: float = DEFAULT_BATCH_TTL
    callback_queue: str = "default"

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> BatchesOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(f"plugin_options.batches.{unknown[0]}", raw[unknown[0]],
                                     f"a known option of the batches plugin: "
                                     f"{', '.join(OPTION_NAMES)}")
        ttl = raw.get("ttl", DEFAULT_BATCH_TTL)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl >= 1:
            raise ConfigurationError("plugin_options.batches.ttl", ttl,
                                     "a number of seconds >= 1 (how long a finished batch's "
                                     "data is kept)")
        queue = raw.get("callback_queue", "default")
        if not isinstance(queue, str) or not queue:
            raise ConfigurationError("plugin_options.batches.callback_queue", queue,
                                     "a non-empty queue name")
        return cls(ttl=float(ttl), callback_queue=queue)
