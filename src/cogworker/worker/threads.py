"""Stopping the worker's background threads the same way everywhere."""

from __future__ import annotations

import threading


def stop_thread(stopping: threading.Event, thread: threading.Thread | None,
                join_timeout: float) -> None:
    """Set ``stopping`` and wait up to ``join_timeout`` s for ``thread`` (never for itself:
    a remote ``stop`` may arrive on the very thread being stopped)."""
    stopping.set()
    if thread is not None and thread is not threading.current_thread():
        thread.join(join_timeout)
