"""One event loop per worker process for ``async def`` jobs.

Processor threads submit coroutines and wait for them, so an async job holds its
processor slot until it finishes and ``concurrency`` still bounds the work in flight.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any


class EventLoopThread:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="cogworker-asyncio",
                                          daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the shared loop and wait for its result (or exception)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return future.result()

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not loop.is_running():
                loop.close()
