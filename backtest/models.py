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


class ReplayJob(models.Model):
    """What a backtest and a tuning share: an app's window, progress and outcome."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    days = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)  # users replayed
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def finished(self) -> bool:
        return self.status in (Status.DONE, Status.FAILED)


class BacktestRun(ReplayJob):
    """Per-app totals only (``service.Report.as_json``): no user id, no record content."""

    candidate = models.JSONField()  # policy values (Policy.snapshot)
    report = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"backtest {self.pk} of {self.app_name}"


class TuneRun(ReplayJob):
    """A tuning requested from the Policies page: per-app totals of the best candidates
    (``tune.Tuning.as_json``), no user id, no record content. Applies nothing."""

    result = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"tuning {self.pk} of {self.app_name}"
