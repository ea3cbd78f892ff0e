"""A supervisor (``run -P 2``) under ``NOTIFY_SOCKET``: systemd hears only the supervisor.

The test binds the datagram socket systemd would, with ``SO_PASSCRED`` so that every message
names its sender. It must hear ``READY=1`` once both children fetch (not when they are
forked), watchdog pings while their beats go on, the fetching count fall and recover when a
child is SIGKILLed and replaced, and ``STOPPING=1`` at the stop, every message from the
supervisor's own pid (the unit needs no ``NotifyAccess=all``).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import uuid
from collections.abc import Iterator

import pytest

from cogworker.supervisor.notify_relay import NotifyRelay
from cogworker.worker.service_notify import ServiceNotifier
from delivery.supervised import kill_all_children, started_children
from runtime.support import StartWorker
from runtime.test_health import HEALTH_APP

pytestmark = pytest.mark.slow

CREDENTIALS = struct.Struct("iII")


@pytest.fixture
def systemd_socket() -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket at a fresh abstract name that reports each sender's pid."""
    name = f"cogworker-test-{uuid.uuid4().hex[:12]}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        sock.bind(b"\0" + name.encode())
        sock.settimeout(30)
        yield sock, f"@{name}"


def receive(sock: socket.socket) -> tuple[int, str]:
    data, ancillary, _flags, _address = sock.recvmsg(4096, socket.CMSG_SPACE(CREDENTIALS.size))
    pids = [CREDENTIALS.unpack(cmsg[:CREDENTIALS.size])[0] for level, kind, cmsg in ancillary
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
    assert len(pids) == 1
    return pids[0], data.decode()


def receive_until(sock: socket.socket, heard: list[tuple[int, str]], wanted: str) -> None:
    while not heard or not heard[-1][1].startswith(wanted):
        heard.append(receive(sock))


def test_the_supervisor_alone_tells_systemd_when_its_children_are_ready(
    start_worker: StartWorker, systemd_socket: tuple[socket.socket, str],
) -> None:
    sock, address = systemd_socket
    supervisor = start_worker(HEALTH_APP, "-P", "2", env={"NOTIFY_SOCKET": address})
    try:
        heard: list[tuple[int, str]] = []
        receive_until(sock, heard, "READY=1")
        assert heard == [(supervisor.pid, "READY=1\nSTATUS=2 of 2 children fetching")]
        receive_until(sock, heard, "WATCHDOG=1")

        first_child = started_children(supervisor)[0][0]
        os.kill(first_child, signal.SIGKILL)
        receive_until(sock, heard, "STATUS=1 of 2 children fetching")
        receive_until(sock, heard, "STATUS=2 of 2 children fetching")
        supervisor.stop()
        receive_until(sock, heard, "STOPPING=1")
    finally:
        kill_all_children(supervisor)
    assert {pid for pid, _message in heard} == {supervisor.pid}
    assert [message for _pid, message in heard if message.startswith("READY")] == [
        "READY=1\nSTATUS=2 of 2 children fetching"]
    assert len(started_children(supervisor)) == 3  # the killed child was replaced


def test_without_notify_socket_no_socket_is_bound_and_children_get_none() -> None:
    relay = NotifyRelay.from_environment(2, {})
    assert not relay.active
    assert relay.child_environment() == {"NOTIFY_SOCKET": None}
    relay.poll([1, 2])  # nothing to read, nothing to send


def test_a_relay_passes_on_ready_once_every_slot_is_ready_and_pings_at_most_once_a_second(
    systemd_socket: tuple[socket.socket, str],
) -> None:
    sock, address = systemd_socket
    relay = NotifyRelay(ServiceNotifier.from_environment({"NOTIFY_SOCKET": address}), 1)
    child = ServiceNotifier.from_environment(
        {"NOTIFY_SOCKET": str(relay.child_environment()["NOTIFY_SOCKET"])}, supervised=True)
    try:
        me = os.getpid()
        child.watchdog()
        relay.poll([me], now=10.0)  # a ping before ready: passed on
        child.ready()
        child.watchdog()
        relay.poll([me], now=10.5)  # ready now; the ping is within the second: held back
        child.watchdog()
        relay.poll([me], now=11.2)
        relay.stopping()
        heard = [receive(sock)[1] for _ in range(4)]
    finally:
        relay.close()
    assert heard == ["WATCHDOG=1", "READY=1\nSTATUS=1 of 1 children fetching", "WATCHDOG=1",
                     "STOPPING=1\nSTATUS=stopping: finishing running jobs"]
