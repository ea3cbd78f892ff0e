"""Lanes: one connection of the pool kept for one busy loop of the worker.

A worker's reliable fetcher claims jobs and its acker acknowledges them many times a second,
each with one script call. Through the pool, each call checks a connection out and back in,
and redis-py first makes a non-blocking read on it to see that it is not stale: three system
calls and about a third of the call's instructions. Every system call releases the
interpreter lock, and in a worker whose threads run on several CPUs each release may hand
the lock to a thread on another CPU (docs/explanation/performance.md).

A lane is a client holding one connection of the pool for one loop's calls (redis-py's
``single_connection_client``): no check-out. Before each call the lane looks at the socket
once without waiting (one ``poll``); a socket with something to read before anything was
asked means the server closed it (a restart, ``CLIENT KILL``), so the connection is dropped
and the call connects again, as a pooled call would. An idle connection is PINGed first by
redis-py's health check. Nothing else differs from a pooled call: a connection error is
raised, never retried. Calls on one lane from several threads take turns, each holding
the lane from its check to its reply.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Final

import redis

CLAIMS: Final = "claims"
ACKNOWLEDGEMENTS: Final = "acknowledgements"
LANES: Final = (CLAIMS, ACKNOWLEDGEMENTS)
"""Every lane a broker may open (its pool is sized for them)."""


class Lanes:
    """The lanes of one client's pool, each opened on first use."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._lanes: dict[str, _Lane] = {}
        self._lock = threading.Lock()
        _ALL_LANES.add(self)

    @contextlib.contextmanager
    def use(self, name: str) -> Iterator[redis.Redis]:
        """Lane ``name``'s client, its connection fresh (see the module doc), for this
        thread alone until the block ends. Opening a lane connects; a failure raises
        redis-py's error."""
        lane = self._lanes.get(name)
        if lane is None:
            lane = self._open(name)
        with lane.lock:  # the check and the call together: a reply due to another thread
            yield lane.fresh()  # would look like the server speaking unasked

    def _open(self, name: str) -> _Lane:
        if name not in LANES:
            raise ValueError(f"no lane {name!r}: the lanes are {', '.join(LANES)}")
        with self._lock:
            lane = self._lanes.get(name)
            if lane is None:
                lane = self._lanes[name] = _Lane(self._client.connection_pool)
        return lane

    def close(self) -> None:
        """Give the lanes' connections back to the pool; a later call opens a lane again."""
        with self._lock:
            lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            lane.client.close()

    def _forget(self) -> None:
        self._lanes = {}
        self._lock = threading.Lock()


class _Lane:
    def __init__(self, pool: Any) -> None:
        # takes one connection of the pool, and connects it, now
        self.client = redis.Redis(connection_pool=pool, single_connection_client=True)
        self.lock = threading.Lock()
        self._watched: socket.socket | None = None
        self._poller = select.poll()

    def fresh(self) -> redis.Redis:
        connection: Any = self.client.connection
        sock = getattr(connection, "_sock", None)  # None while disconnected
        if isinstance(sock, socket.socket) and self._spoke_unasked(sock):
            connection.disconnect()  # the next command connects again
        return self.client

    def _spoke_unasked(self, sock: socket.socket) -> bool:
        if sock is not self._watched:
            self._poller = select.poll()
            self._poller.register(sock, select.POLLIN)
            self._watched = sock
        return bool(self._poller.poll(0))


_ALL_LANES: weakref.WeakSet[Lanes] = weakref.WeakSet()


def _forget_lanes_after_fork() -> None:
    """In a forked child: the parent's lane connections are not ours to use, nor to close
    (redis-py resets a pool in a child, not a single-connection client)."""
    for lanes in list(_ALL_LANES):
        lanes._forget()


os.register_at_fork(after_in_child=_forget_lanes_after_fork)
