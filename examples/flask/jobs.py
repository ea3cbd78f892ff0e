"""The jobs of the Flask example. The worker: ``cogworker run -A jobs:app`` (from this folder)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import cogworker

# No redis_url here: COGWORKER_REDIS_URL (or a private redis-server under .cogworker/).
app = cogworker.App()
log = logging.getLogger("examples.flask")
REPORTS = Path(os.environ.get("EXAMPLE_REPORTS", "reports"))


@app.job(queue="reports", retry=5)
def build_report(account: str, month: str) -> None:
    """Pretend to build a monthly report: writes ``<account>-<month>.txt``."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{account}-{month}.txt").write_text(f"report for {account}, {month}\n",
                                                   encoding="utf-8")
    log.info("report %s/%s built", account, month)
