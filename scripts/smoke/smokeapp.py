"""The app of the compatibility smoke (``scripts/compat-smoke``): each job writes its label
to a ledger file outside Redis, so the check sees what ran without asking the Redis under
test."""

from __future__ import annotations

import os

import cogworker

app = cogworker.App()  # COGWORKER_REDIS_URL and COGWORKER_NAMESPACE come from the environment


def write(label: str) -> None:
    with open(os.environ["CW_SMOKE_LEDGER"], "a", encoding="utf-8") as ledger:
        ledger.write(label + "\n")


@app.job
def record(label: str) -> None:
    write(label)


@app.job(unique="until_executed", unique_for=60)
def record_once(label: str) -> None:
    write(label)


@app.job
def relay(label: str) -> None:
    """Pushes from inside the worker: twice, so the second push takes the push line."""
    record.perform_async(f"{label}-1")
    record.perform_async(f"{label}-2")


app.periodic("* * * * * *", record, args=["cron"])
