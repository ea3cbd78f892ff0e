"""OS signal handlers only put tokens on a queue; they are restored afterwards."""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading

import pytest

from cogworker.worker import signals
from cogworker.worker.launcher import dump_threads

POSIX_ONLY = pytest.mark.skipif(not hasattr(signal, "SIGTSTP"), reason="POSIX signals")


def drain(tokens: signals.TokenQueue, expected: int) -> list[str]:
    return [tokens.get(timeout=5) for _ in range(expected)]


@POSIX_ONLY
def test_signals_become_tokens_and_previous_handlers_come_back() -> None:
    before = {signum: signal.getsignal(signum) for signum in signals.SIGNAL_TOKENS}
    tokens: signals.TokenQueue = queue.SimpleQueue()
    installed = signals.install(tokens)
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGTSTP, signal.SIGTTIN):
            os.kill(os.getpid(), signum)
        received = drain(tokens, 4)
    finally:
        installed.restore()

    assert received == ["stop", "stop", "quiet", "dump"]
    assert {signum: signal.getsignal(signum) for signum in signals.SIGNAL_TOKENS} == before
    installed.restore()  # idempotent


def test_off_the_main_thread_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGTERM)
    results: list[signals.InstalledHandlers] = []
    thread = threading.Thread(target=lambda: results.append(signals.install(
        queue.SimpleQueue())))
    thread.start()
    thread.join()

    assert results[0].previous == {}
    assert signal.getsignal(signal.SIGTERM) is before


def test_thread_dump_logs_every_thread_stack(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    def parked_for_the_dump() -> None:
        release.wait(10)

    thread = threading.Thread(target=parked_for_the_dump, name="parked-thread")
    thread.start()
    try:
        with caplog.at_level(logging.WARNING, logger="cogworker.launcher"):
            dump_threads()
    finally:
        release.set()
        thread.join()

    dumped = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("parked-thread" in r.getMessage() and "parked_for_the_dump" in r.getMessage()
               for r in dumped)
    assert any("MainThread" in r.getMessage() for r in dumped)
