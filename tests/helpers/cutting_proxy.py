"""A TCP proxy in front of a real Redis that loses one reply: the command reaches Redis and
runs, then the client's connection is cut before the answer arrives — the case in which a
client must not write the command again."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from helpers.proxy import ForwardingProxy


class CuttingProxy(ForwardingProxy):
    """Forwards everything, except that after the first client chunk containing ``marker``
    it drops Redis's reply and cuts that client connection (once)."""

    def __init__(self, upstream_port: int, marker: bytes) -> None:
        self._marker = marker
        self.cuts = 0
        self._armed = True
        self._lock = threading.Lock()
        super().__init__(upstream_port)

    def from_client(self, link: SimpleNamespace, data: bytes) -> bool:
        with self._lock:
            if self._armed and self._marker in data:
                self._armed = False
                link.cut = True
        return True

    def from_redis(self, link: SimpleNamespace, data: bytes) -> bool:
        if getattr(link, "cut", False):
            self.cuts += 1
            return False
        return True
