"""POST /orders/<database>/ with ``token`` and ``how``: create an order and enqueue
``record_order`` inside ``transaction.atomic()``; ``fail=1`` rolls the transaction back."""

from __future__ import annotations

import time

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from shop.jobs import RecordOrder, record_order
from shop.models import JobRun, Order


class Rollback(Exception):
    pass


def enqueue(how: str, token: str, database: str) -> str | None:
    if how == "perform_on_commit":  # the default database's transaction
        return record_order.perform_on_commit(token, database)
    if how == "on_commit":
        return record_order.on_commit(using=database).perform_async(token, database)
    if how == "class":
        return RecordOrder.on_commit(using=database).perform_async(token, database)
    if how == "immediate":  # the bug on-commit enqueue exists to avoid
        return record_order.perform_async(token, database)
    raise ValueError(how)


def wait_for_job(token: str, database: str) -> None:
    """Keep the transaction open until the job has run (its JobRun row is committed)."""
    deadline = time.monotonic() + 30
    while not JobRun.objects.using(database).filter(token=token).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the job for {token} never ran")
        time.sleep(0.05)


@csrf_exempt
def create_order(request: HttpRequest, database: str) -> HttpResponse:
    token, how = request.POST["token"], request.POST["how"]
    jid = None
    try:
        with transaction.atomic(using=database):
            Order.objects.using(database).create(token=token)
            jid = enqueue(how, token, database)
            if request.POST.get("fail"):
                raise Rollback
            if how == "immediate":
                wait_for_job(token, database)
    except Rollback:
        return JsonResponse({"jid": jid, "committed": False}, status=409)
    return JsonResponse({"jid": jid, "committed": True})
