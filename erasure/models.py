"""Erasure requests, their append-only audit log, and the barriers they raise.

The job that works on these rows is ``erasure.jobs``. A request names its subject
in clear (``user_id``) only while it is open or failed: once verified the user id is
cleared and only ``subject_hash`` (a keyed HMAC) remains, so keeping the request, its
audit log and its receipt keeps none of the erased data. Audit entries and barriers
only ever hold the hash.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db import connection, models
from django.db.models import Q

from records.models import APP_NAME_MAX, USER_ID_MAX

TICKET_MAX = 128
REASON_MAX = 2000


class ErasureStatus(models.TextChoices):
    SUBMITTED = "submitted", "submitted"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed (verifying)"
    VERIFIED = "verified", "verified"
    FAILED = "failed", "failed"


# A job may still work on a request in these states (and a reconciler re-queues them).
OPEN_STATUSES = (ErasureStatus.SUBMITTED, ErasureStatus.RUNNING, ErasureStatus.COMPLETED)


class AppendOnlyError(RuntimeError):
    pass


class NoDeleteQuerySet(models.QuerySet):
    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are compliance records: never deleted.")

    delete.queryset_only = True


class AppendOnlyQuerySet(NoDeleteQuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} is append-only: rows are never updated.")

    # bulk_update goes through update(); _update (used by save()) is refused in save().


class ErasureRequest(models.Model):
    """One subject's erasure, from submission to a verified receipt."""

    # Stable id of the job, printed on the receipt (Celery task ids vary per delivery).
    job_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    app_name = models.CharField(max_length=APP_NAME_MAX, blank=True, help_text="Empty: all apps.")
    user_id = models.CharField(
        max_length=USER_ID_MAX, blank=True, help_text="In clear only until verified, then ''."
    )
    subject_hash = models.CharField(max_length=64, help_text="Keyed HMAC of the user id.")
    ticket = models.CharField(max_length=TICKET_MAX)
    reason = models.TextField(max_length=REASON_MAX)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_name = models.CharField(max_length=150)
    status = models.CharField(
        max_length=16, choices=ErasureStatus.choices, default=ErasureStatus.SUBMITTED
    )
    failure_reason = models.TextField(blank=True)
    submitted_at = models.DateTimeField()
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Last message sent.")
    started_at = models.DateTimeField(null=True, blank=True)
    barrier_raised_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()
    # The run that holds the request (NULL: nobody). Every batch re-checks it, so a run
    # whose lease the reconciler took away stops at its next batch.
    claim_token = models.UUIDField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # {store label: {"deleted": n, "batches": n, "done": bool}}, saved with every batch.
    progress = models.JSONField(default=dict, blank=True)
    # {store label: rows (or keys) still found by verification}
    verification = models.JSONField(default=dict, blank=True)
    receipt = models.JSONField(null=True, blank=True)
    receipt_sha256 = models.CharField(max_length=64, blank=True)

    objects = NoDeleteQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-id"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="erasure_status_heartbeat"),
            models.Index(fields=["subject_hash"], name="erasure_subject"),
        ]
        constraints = [
            # One open request per subject and scope: a second would only race the first.
            models.UniqueConstraint(
                fields=["app_name", "subject_hash"],
                condition=Q(status__in=["submitted", "running", "completed"]),
                name="erasure_one_open_per_subject",
            ),
            # The user id is needed until verification, and only until then.
            models.CheckConstraint(
                condition=(Q(status="verified") & Q(user_id=""))
                | (~Q(status="verified") & ~Q(user_id="")),
                name="erasure_user_id_until_verified",
            ),
            models.CheckConstraint(condition=~Q(subject_hash=""), name="erasure_subject_hash_set"),
        ]

    def __str__(self) -> str:  # never the user id: this ends up in logs and the admin
        return f"erasure #{self.pk} ({self.scope_label}, {self.status})"

    @property
    def scope_label(self) -> str:
        return self.app_name or "all apps"

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Erasure requests are compliance records: never deleted.")


class ErasureAuditEntry(models.Model):
    """One state change of one request. Append-only (ORM, admin and, on PostgreSQL, a
    trigger refuse UPDATE and DELETE). Never holds the user id."""

    request = models.ForeignKey(ErasureRequest, on_delete=models.PROTECT, related_name="audit")
    at = models.DateTimeField()
    actor = models.CharField(max_length=200, help_text="Staff username, command or job.")
    action = models.CharField(max_length=32)
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    task_id = models.CharField(max_length=255, blank=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["request", "id"]  # insertion order: the log as written
        indexes = [models.Index(fields=["request", "at"], name="erasure_audit_request")]
        verbose_name_plural = "erasure audit entries"

    def __str__(self) -> str:
        return f"erasure #{self.request_id} {self.action} at {self.at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Erasure audit entries are append-only: never updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Erasure audit entries are append-only: never deleted.")


class ErasureBarrier(models.Model):
    """Raised by an erasure before it deletes anything; checked by every ingest.

    Ingest refuses to run if it started before a barrier of its (app, user) and drops
    candidates stamped before it (``records.erasure_guard``). Barriers are kept: a
    session object read before the erasure may come back at any time, and a barrier
    holds only the keyed hash of the user id.
    """

    request = models.OneToOneField(ErasureRequest, on_delete=models.PROTECT, related_name="barrier")
    app_name = models.CharField(max_length=APP_NAME_MAX, blank=True, help_text="Empty: all apps.")
    subject_hash = models.CharField(max_length=64)
    raised_at = models.DateTimeField()

    objects = NoDeleteQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["subject_hash", "app_name", "raised_at"], name="erasure_barrier")
        ]

    def __str__(self) -> str:
        return f"barrier of erasure #{self.request_id} ({self.app_name or 'all apps'})"

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Erasure barriers are kept: never deleted.")


def _latest_barrier_qs(subject_hash: str, app_name: str):
    return (
        ErasureBarrier.objects.filter(subject_hash=subject_hash, app_name__in=["", app_name])
        .order_by("-raised_at")
        .values_list("raised_at", "request_id")
    )


def latest_barrier(subject_hash: str, app_name: str) -> tuple[datetime, int] | None:
    """(raised_at, request id) of the newest barrier covering the subject in ``app_name``
    (its own or an all-apps one); ``records.erasure_guard`` checks it on every ingest."""
    return _latest_barrier_qs(subject_hash, app_name).first()


def subjects_erased_after(
    subject_hashes: Sequence[str], app_name: str, moment: datetime
) -> set[str]:
    """Of ``subject_hashes``, those whose erasure covering ``app_name`` (its own or an
    all-apps one) had not finished deleting at ``moment``: its barrier was raised after
    it, or its request was not complete by then (still deleting, or failed and waiting
    for a retry). What was read of them at ``moment`` may be erased data. One statement
    for any number of subjects."""
    unfinished = Q(raised_at__gt=moment) | Q(request__completed_at__isnull=True)
    return set(
        ErasureBarrier.objects.filter(
            unfinished | Q(request__completed_at__gt=moment),
            subject_hash__in=list(subject_hashes),
            app_name__in=["", app_name],
        ).values_list("subject_hash", flat=True)
    )


def latest_barrier_sql(subject_hash: str, app_name: str) -> tuple[str, tuple]:
    """``latest_barrier`` as SQL (at most one row: raised_at, request_id) and its
    parameters, so ingest can fold the check into a statement it runs anyway. The ORM
    writes the statement once per process (compiling it cost more than running it);
    each call fills in its own values."""
    sql, params = _latest_barrier_template(connection.vendor)
    values = {_SUBJECT: subject_hash, _APP: app_name}
    return sql, tuple(values.get(p, p) if isinstance(p, str) else p for p in params)


# Stand-ins for the values, which the template's parameters carry in their place.
_SUBJECT = "\x00subject"
_APP = "\x00app"


@functools.cache
def _latest_barrier_template(vendor: str) -> tuple[str, tuple]:
    sql, params = _latest_barrier_qs(_SUBJECT, _APP)[:1].query.sql_with_params()
    if _SUBJECT not in params or _APP not in params:
        raise RuntimeError("the barrier lookup no longer takes its values as parameters")
    return sql, tuple(params)
