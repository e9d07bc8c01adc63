"""The staff audit log: who changed what, when, from what to what. Append-only."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AppendOnlyError(RuntimeError):
    """An audit entry was about to be changed or deleted."""


class AuditEntryQuerySet(models.QuerySet):
    # Bulk changes would bypass AuditEntry.save/delete, so they are refused here too.
    def update(self, **kwargs):
        raise AppendOnlyError("Audit entries are append-only; they cannot be updated.")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AppendOnlyError("Audit entries are append-only; they cannot be updated.")

    def delete(self):
        raise AppendOnlyError("Audit entries are append-only; they cannot be deleted.")

    def pseudonymise_subject(self, pseudonym: str) -> int:
        """Erasure's one permitted change: stop naming the subject (user id -> pseudonym).

        The PostgreSQL trigger allows exactly this (only user_id changes, to 'erased:…').
        """
        if not pseudonym.startswith("erased:"):
            raise AppendOnlyError("A subject's user id can only be replaced by 'erased:…'.")
        return super().update(user_id=pseudonym)


class AuditEntry(models.Model):
    """One staff action. Holds ids, flags, numbers and policy values, never memory content.

    On PostgreSQL a trigger also refuses UPDATE and DELETE (migration 0002), so raw SQL
    cannot rewrite history either; the one exception is the SET NULL of ``actor`` when a
    staff account is deleted, which is why ``actor_username`` is copied.
    """

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_username = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    app_name = models.CharField(max_length=128, blank=True)
    user_id = models.CharField(max_length=256, blank=True, help_text="The memory subject.")
    target = models.CharField(max_length=256, blank=True, help_text="e.g. a record id.")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="audit_time"),
            models.Index(fields=["action", "-created_at"], name="audit_action"),
            models.Index(fields=["app_name", "user_id", "-created_at"], name="audit_subject"),
            models.Index(fields=["actor_username", "-created_at"], name="audit_actor"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_username} {self.action}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("Audit entries are append-only; they cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit entries are append-only; they cannot be deleted.")
