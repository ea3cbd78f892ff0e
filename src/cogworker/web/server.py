"""Serving the dashboard on its own (``cogworker web``): where it may listen, and uvicorn."""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import TYPE_CHECKING

from cogworker.core.errors import CogworkerError

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.web.settings import WebSettings

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7474


class UnsafeBindError(CogworkerError):
    """The dashboard was asked to listen beyond loopback with nothing guarding it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_bind(host: str, authorizers: list[str], insecure_no_auth: bool) -> None:
    """Refuse a non-loopback ``host`` unless a plugin decides who may see the dashboard
    (``cogworker_web_authorize``) or the operator said ``--insecure-no-auth``."""
    if is_loopback(host) or authorizers:
        return
    if insecure_no_auth:
        logger.warning("the dashboard listens on %s with no authentication: anyone who can "
                       "reach it can delete jobs and stop workers", host)
        return
    raise UnsafeBindError(
        f"refusing to serve the dashboard on {host}: that address is reachable from other "
        "machines and no active plugin implements cogworker_web_authorize. Activate an auth "
        "plugin (--plugin NAME), put the dashboard behind your framework's login (see "
        "docs/how-to/mount-dashboard.md), or pass --insecure-no-auth if the network itself "
        "is private")


def serve(app: App, settings: WebSettings, host: str, port: int, *,
          insecure_no_auth: bool = False, log_level: str = "info") -> None:
    """Build the dashboard and serve it with uvicorn until interrupted."""
    import uvicorn

    from cogworker.web.application import create_app

    web = create_app(app, settings)
    check_bind(host, app.hooks.web_authorizers(), insecure_no_auth)
    logger.info("dashboard for namespace %r on http://%s:%d/", app.settings.namespace,
                host if ":" not in host else f"[{host}]", port)
    uvicorn.run(web, host=host, port=port, log_level=log_level, proxy_headers=False,
                server_header=False)
