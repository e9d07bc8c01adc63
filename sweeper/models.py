"""Background runs. The truth lives here, not in the broker.

A sweep, an enforcement pass or an applied plan is a ``Run`` row. A Celery message
only nudges a worker to claim it with a conditional update; a reconciler re-queues
runs whose worker died. Redis can lose or repeat a message; the row cannot.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from records.models import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX


class RunKind(models.TextChoices):
    SWEEP = "sweep", "idle-session sweep"
    ENFORCE = "enforce", "cap enforcement"
    APPLY = "apply", "apply a dry-run plan"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class Run(models.Model):
    kind = models.CharField(max_length=16, choices=RunKind.choices)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    dry_run = models.BooleanField(default=False)
    app_name = models.CharField(max_length=APP_NAME_MAX, blank=True, help_text="Empty: all apps.")
    # The clock the run uses; a dry-run "as of" next month previews next month's sweep.
    as_of = models.DateTimeField()
    # For an apply run: the dry-run whose plan it executes (each plan applies once).
    plan = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="application"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # One run per schedule slot, however many beat processes fire it.
    schedule_key = models.CharField(max_length=128, null=True, blank=True, unique=True)  # noqa: DJ001
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The last message that nudged a worker: the reconciler re-sends only after a stale
    # period, so a broker whose workers are down does not fill up with copies.
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Last message sent.")
    claim_token = models.CharField(max_length=64, blank=True)
    claimed_by = models.CharField(max_length=255, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat")]
        constraints = [
            models.CheckConstraint(
                condition=Q(done__lte=models.F("total")) | Q(total=0), name="run_done_le_total"
            ),
        ]

    def __str__(self) -> str:
        mode = "dry-run " if self.dry_run else ""
        return f"{mode}{self.kind} #{self.pk} ({self.status})"

    @property
    def progress_percent(self) -> int:
        if self.status == RunStatus.DONE:
            return 100
        return round(100 * self.done / self.total) if self.total else 0


class ItemKind(models.TextChoices):
    SESSIONS = "sessions", "retire one user's idle sessions"
    USERS = "users", "enforce a batch of users"
    APPLY_USER = "apply_user", "apply one user's part of a plan"


class ItemStatus(models.TextChoices):
    PLANNED = "planned", "planned"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class WorkItem(models.Model):
    """One unit of work a worker claims: a session, a batch of users, a user's plan part.

    Runs fan out one Celery task per item, so work spreads over worker processes;
    an item is claimed with a conditional update and completed at most once.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=16, choices=ItemKind.choices)
    status = models.CharField(max_length=16, choices=ItemStatus.choices, default=ItemStatus.PLANNED)
    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX, blank=True)
    session_id = models.CharField(max_length=SESSION_ID_MAX, blank=True)
    users = models.JSONField(default=list, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Last message sent.")
    claim_token = models.CharField(max_length=64, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "status"], name="item_run_status"),
            models.Index(fields=["app_name", "user_id"], name="item_user"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} item {self.pk} ({self.status})"


class EntryKind(models.TextChoices):
    SESSION = "session", "session that would retire"
    RECORD = "record", "record that would be evicted"


class ApplyStatus(models.TextChoices):
    PENDING = "pending", "not applied"
    APPLIED = "applied", "applied"
    REFUSED = "refused", "refused (stale)"


class PlanEntry(models.Model):
    """One line of a dry-run report: what would happen and why, with the score breakdown.

    Applying the plan executes exactly these entries and refuses, with a message, the
    ones that went stale since the preview (a record pinned, a session active again).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="entries")
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX, blank=True)
    # A record that exists, or one the plan's own ingest would create (by dedupe key).
    record_id = models.BigIntegerField(null=True, blank=True)
    dedupe_key = models.CharField(max_length=64, blank=True)
    reason = models.CharField(max_length=32, blank=True)
    recency = models.FloatField(null=True, blank=True)
    frequency = models.FloatField(null=True, blank=True)
    importance = models.FloatField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    # What the preview saw, to detect staleness (never memory content).
    snapshot = models.JSONField(default=dict, blank=True)
    apply_status = models.CharField(
        max_length=16, choices=ApplyStatus.choices, default=ApplyStatus.PENDING
    )
    apply_message = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "app_name", "user_id"], name="entry_run_user"),
            models.Index(fields=["app_name", "user_id"], name="entry_user"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.session_id or self.record_id or self.dedupe_key[:8]}"


class DailyMetric(models.Model):
    """Daily roll-ups behind the charts. Counts and sizes only; never content or ids."""

    day = models.DateField()
    app_name = models.CharField(max_length=APP_NAME_MAX)
    name = models.CharField(max_length=48)
    value = models.FloatField()

    class Meta:
        ordering = ["day", "app_name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["day", "app_name", "name"], name="daily_metric_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.app_name} {self.name}={self.value}"
