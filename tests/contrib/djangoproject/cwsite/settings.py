"""Settings of the test project: databases and Redis come from ``CWSITE_*`` variables."""

from __future__ import annotations

import os
from typing import Any

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
INSTALLED_APPS = ["cogworker.contrib.django", "shop"]
ROOT_URLCONF = "cwsite.urls"
USE_TZ = True
MIDDLEWARE: list[str] = []

DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["CWSITE_SQLITE"],
        "OPTIONS": {"timeout": 30},
    },
}
if os.environ.get("CWSITE_PG_HOST"):
    DATABASES["postgres"] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "cwsite",
        "USER": "cogworker",
        "HOST": os.environ["CWSITE_PG_HOST"],  # a folder: the server's unix socket
    }

COGWORKER = {
    "redis_url": os.environ["CWSITE_REDIS_URL"],
    "namespace": os.environ["CWSITE_NAMESPACE"],
    "heartbeat_interval": 0.3,
    "poll_interval": 0.3,
}
