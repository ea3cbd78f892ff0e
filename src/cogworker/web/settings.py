"""The dashboard's own settings (the app's settings say where Redis is; these say how the
pages behave)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Collection
from dataclasses import dataclass, field

from cogworker.core.errors import ConfigurationError

SECRET_ENV = "COGWORKER_SESSION_SECRET"
DEFAULT_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
MIN_SECRET_CHARS = 32


def _secret_from_env() -> str:
    return os.environ.get(SECRET_ENV) or secrets.token_hex(32)


@dataclass(frozen=True)
class WebSettings:
    """How the dashboard behaves.

    :param read_only: hide every action and refuse every POST with 403.
    :param time_format: strftime format of timestamps (shown in the browser's time zone).
    :param live_update_interval: seconds between refreshes while Live is on.
    :param per_page: rows per page of every table (the page size links offer others).
    :param secret: signs the CSRF token; ``COGWORKER_SESSION_SECRET``, else random per
        process (tokens then last until a restart; pages fetch a fresh one).
    :param csrf_exempt: paths (after the mount prefix) whose POSTs skip the CSRF check,
        e.g. an SSO callback handled by a plugin's route.
    :param title: the name in the header and the page titles.
    """

    read_only: bool = False
    time_format: str = DEFAULT_TIME_FORMAT
    live_update_interval: float = 3.0
    per_page: int = 25
    secret: str = field(default_factory=_secret_from_env, repr=False)
    csrf_exempt: Collection[str] = ()
    title: str = "cogworker"

    def __post_init__(self) -> None:
        if not 0.5 <= self.live_update_interval <= 3600:
            raise ConfigurationError("live_update_interval", self.live_update_interval,
                                     "a number of seconds from 0.5 to 3600")
        if not 1 <= self.per_page <= 200:
            raise ConfigurationError("per_page", self.per_page, "a whole number from 1 to 200")
        if len(self.secret) < MIN_SECRET_CHARS:
            raise ConfigurationError("secret", "(hidden)",
                                     f"at least {MIN_SECRET_CHARS} characters "
                                     f"(e.g. {SECRET_ENV}=$(openssl rand -hex 32))")
