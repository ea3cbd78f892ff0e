"""The systemd notifier on its own: path and abstract addresses, supervised children, no
socket, and a socket that is gone (logged once, never raised)."""

from __future__ import annotations

import logging
import socket
import tempfile
from pathlib import Path

import pytest

from cogworker.worker.service_notify import ServiceNotifier, socket_address


def test_addresses() -> None:
    assert socket_address("/run/systemd/notify") == "/run/systemd/notify"
    assert socket_address("@name") == b"\0name"
    assert socket_address("vsock:2:1234") is None


def test_a_path_socket_hears_every_message_and_a_child_never_says_stopping() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:  # short: unix paths are limited
        path = str(Path(folder) / "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(path)
            sock.settimeout(5)
            notifier = ServiceNotifier.from_environment({"NOTIFY_SOCKET": path})
            child = ServiceNotifier.from_environment({"NOTIFY_SOCKET": path}, supervised=True)
            notifier.ready()
            notifier.watchdog()
            child.stopping()  # sends nothing
            notifier.stopping()
            heard = [sock.recv(4096).decode() for _ in range(3)]
    assert heard[0] == "READY=1\nSTATUS=fetching jobs"
    assert heard[1] == "WATCHDOG=1"
    assert heard[2].startswith("STOPPING=1\n")


def test_without_notify_socket_nothing_is_sent() -> None:
    notifier = ServiceNotifier.from_environment({})
    assert not notifier.enabled
    notifier.ready()  # no socket: nothing to fail


def test_a_missing_socket_is_logged_once_and_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = ServiceNotifier.from_environment({"NOTIFY_SOCKET": "/nonexistent/notify"})
    with caplog.at_level(logging.WARNING, logger="cogworker.worker.service_notify"):
        notifier.watchdog()
        notifier.watchdog()
    assert [record.getMessage()[:34] for record in caplog.records] == [
        "cannot notify systemd at NOTIFY_SO"]
