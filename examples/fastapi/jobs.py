"""The jobs of the FastAPI example: one ``async def`` job, run on the worker's event loop.

The worker: ``cogworker run -A jobs:app`` (from this folder).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import cogworker

# No redis_url here: COGWORKER_REDIS_URL (or a private redis-server under .cogworker/).
app = cogworker.App()
log = logging.getLogger("examples.fastapi")
OUTBOX = Path(os.environ.get("EXAMPLE_OUTBOX", "outbox.txt"))


@app.job(queue="mail", retry=3)
async def send_welcome(email: str) -> None:
    """Pretend to send a mail: the "sent" line goes to the outbox file."""
    await asyncio.sleep(0.01)  # an HTTP call to the mail service would go here
    with OUTBOX.open("a", encoding="utf-8") as outbox:
        outbox.write(f"welcome {email}\n")
    log.info("welcome mail sent to %s", email)
