from __future__ import annotations

from django.db import models


class Order(models.Model):
    token: models.CharField[str, str] = models.CharField(max_length=64, unique=True)


class JobRun(models.Model):
    """Written by the job when it runs: whether it found its order."""

    token: models.CharField[str, str] = models.CharField(max_length=64)
    found_order: models.BooleanField[bool, bool] = models.BooleanField()
