"""A TCP proxy in front of a real Redis that loses one reply: the command reaches Redis and
runs, then the client's connection is cut before the answer arrives — the case in which a
client must not write the command again."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class CuttingProxy:
    """Forwards everything, except that after the first client chunk containing ``marker``
    it drops Redis's reply and cuts that client connection (once)."""

    def __init__(self, upstream_port: int, marker: bytes) -> None:
        self._upstream = upstream_port
        self._marker = marker
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.cuts = 0
        self._armed = True
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            self._sockets += [client, upstream]
            cut = threading.Event()
            threading.Thread(target=self._to_redis, args=(client, upstream, cut),
                             daemon=True).start()
            threading.Thread(target=self._to_client, args=(upstream, client, cut),
                             daemon=True).start()

    def _to_redis(self, client: socket.socket, upstream: socket.socket,
                  cut: threading.Event) -> None:
        while data := _recv(client):
            with self._lock:
                if self._armed and self._marker in data:
                    self._armed = False
                    cut.set()
            upstream.sendall(data)

    def _to_client(self, upstream: socket.socket, client: socket.socket,
                   cut: threading.Event) -> None:
        while data := _recv(upstream):
            if cut.is_set():
                self.cuts += 1
                for end in (client, upstream):
                    _shut(end)
                return
            client.sendall(data)

    def close(self) -> None:
        for sock in self._sockets:
            _shut(sock)

    def __enter__(self) -> CuttingProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
