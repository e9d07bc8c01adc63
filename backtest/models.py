"""A backtest requested from the Policies page: its progress and its per-day totals."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from records.models import APP_NAME_MAX


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class BacktestRun(models.Model):
    """Per-app totals only (``service.Report.as_json``): no user id, no record content."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    days = models.PositiveIntegerField()
    candidate = models.JSONField()  # policy values (Policy.snapshot)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)  # users replayed
    total = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"backtest {self.pk} of {self.app_name}"

    @property
    def finished(self) -> bool:
        return self.status in (Status.DONE, Status.FAILED)


class TuneRun(models.Model):
    """A tuning requested from the Policies page: per-app totals of the best candidates
    (``tune.Tuning.as_json``), no user id, no record content. Applies nothing."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    days = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)  # users replayed
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"tuning {self.pk} of {self.app_name}"

    @property
    def finished(self) -> bool:
        return self.status in (Status.DONE, Status.FAILED)
