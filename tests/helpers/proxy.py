"""TCP proxies in front of a real Redis, each connection relayed by one thread.

:class:`ForwardingProxy` passes everything through; subclasses change what a connection
sees: :class:`TlsProxy` speaks TLS to the client (the redis-server the tests run has no TLS
of its own), :class:`~helpers.cutting_proxy.CuttingProxy` loses one reply.
"""

from __future__ import annotations

import contextlib
import functools
import selectors
import socket
import ssl
import threading
from types import SimpleNamespace, TracebackType
from typing import TypeVar

_CHUNK = 65536
P = TypeVar("P", bound="ForwardingProxy")


class ForwardingProxy:
    """Relays every connection to the Redis on 127.0.0.1:``upstream_port``, both ways."""

    scheme = "redis"

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = [self._listener]
        self.relays_ended = 0  # connections over, both sides closed
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/0"

    def from_client(self, link: SimpleNamespace, data: bytes) -> bool:
        """Called with each chunk the client sends, before it is passed on; False cuts
        the connection instead. ``link`` is a namespace of this connection's own."""
        return True

    def from_redis(self, link: SimpleNamespace, data: bytes) -> bool:
        """The same for each chunk Redis answers."""
        return True

    def wrap(self, client: socket.socket) -> socket.socket:
        """The socket to talk to the client through (TLS wraps it)."""
        return client

    def close(self) -> None:
        for sock in self._sockets:
            shut(sock)

    def __enter__(self: P) -> P:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, raw_client: socket.socket) -> None:
        try:
            client = self.wrap(raw_client)
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
        except OSError:
            shut(raw_client)
            return
        self._sockets += [client, upstream]
        link = SimpleNamespace()
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ,
                              (upstream, functools.partial(self.from_client, link)))
            selector.register(upstream, selectors.EVENT_READ,
                              (client, functools.partial(self.from_redis, link)))
            while _pass_on(selector):
                pass
        shut(client)
        shut(upstream)
        self.relays_ended += 1


def _pass_on(selector: selectors.BaseSelector) -> bool:
    """Move what one side has to the other; False when the connection is over."""
    for key, _ in selector.select():
        source: socket.socket = key.fileobj  # type: ignore[assignment]
        target, allowed = key.data
        while True:
            data = _recv(source)
            if not data or not allowed(data):
                return False
            try:
                target.sendall(data)
            except OSError:
                return False
            if not (isinstance(source, ssl.SSLSocket) and source.pending()):
                break
    return True


class TlsProxy(ForwardingProxy):
    """Speaks TLS to its clients with a certificate for 127.0.0.1 that ``ca_file`` signed."""

    scheme = "rediss"

    def __init__(self, upstream_port: int, context: ssl.SSLContext, ca_file: str) -> None:
        self._context = context
        self.ca_file = ca_file
        super().__init__(upstream_port)

    @property
    def url(self) -> str:
        return f"{super().url}?ssl_ca_certs={self.ca_file}"

    def wrap(self, client: socket.socket) -> socket.socket:
        return self._context.wrap_socket(client, server_side=True)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(_CHUNK)
    except OSError:
        return b""


def shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
