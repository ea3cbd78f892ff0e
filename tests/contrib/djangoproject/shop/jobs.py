"""Found by cogworker.contrib.django's autodiscovery in every process (web and worker)."""

from __future__ import annotations

import cogworker
from cogworker.contrib.django import app
from shop.models import JobRun, Order


@app.job
def record_order(token: str, database: str) -> None:
    found = Order.objects.using(database).filter(token=token).exists()
    JobRun.objects.using(database).create(token=token, found_order=found)


@app.job
class RecordOrder(cogworker.Job):
    def perform(self, token: str, database: str) -> None:
        record_order(token, database)
