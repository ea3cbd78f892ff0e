"""``WorkerHandle``: what lifecycle hooks see of a running worker process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost
    from cogworker.core.settings import Settings


class WorkerHandle(Protocol):
    """What a plugin sees of a running worker process in lifecycle hooks."""

    @property
    def identity(self) -> str:
        """The worker process's identity."""
        ...

    @property
    def app(self) -> PluginHost:
        """The application the worker runs."""
        ...

    @property
    def settings(self) -> Settings: ...

    def performing_jobs(self) -> list[Payload]:
        """Payloads whose ``perform`` has started and not yet returned."""
        ...
