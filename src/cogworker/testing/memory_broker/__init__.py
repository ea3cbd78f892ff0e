"""The in-memory broker: the whole broker contract in one process, for tests and
development (see :class:`MemoryBroker`; its plugin is
:mod:`cogworker.testing.memory_broker.plugin`, named ``memory``).

One module per facet (``queues``, ``held`` with ``recovery``, ``sets``, ``processes``,
``locks``, ``periodic``, ``stats``), the shared ``state`` under one lock, and ``locate``.
"""

from __future__ import annotations

from cogworker.testing.memory_broker.broker import MemoryBroker

__all__ = ["MemoryBroker"]
