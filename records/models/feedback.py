"""Signals of memory quality: regret terms, corrections and the daily counters."""

from __future__ import annotations

from django.db import models

from .limits import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX


class RegretTerm(models.Model):
    """A keyed hash of one term of a recently evicted record, never the term itself.

    A later search whose terms match an evicted record is a "regret hit": a sign the
    policy evicted something still wanted. Kept for a bounded window, then pruned.
    """

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    record_id = models.BigIntegerField()
    term_hash = models.CharField(max_length=32)
    evicted_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["app_name", "user_id", "term_hash"], name="regret_lookup"),
            models.Index(fields=["evicted_at"], name="regret_age"),
        ]

    def __str__(self) -> str:
        return f"regret term of {self.record_id}"


class Correction(models.Model):
    """An agent reported that the user had to repeat something ("I told you before…").

    Only the fact and whether it matched a recently evicted record: no text.
    """

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX, blank=True)
    matched_eviction = models.BooleanField(default=False)
    reported_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["reported_at"], name="correction_time"),
            models.Index(fields=["app_name", "user_id"], name="correction_user"),
        ]

    def __str__(self) -> str:
        return f"correction {self.app_name}/{self.user_id}"


class DailyCounter(models.Model):
    """Per-app daily counts the metrics need: sessions ingested, searches, regret hits."""

    day = models.DateField()
    app_name = models.CharField(max_length=APP_NAME_MAX)
    name = models.CharField(max_length=32)
    value = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "app_name", "name"], name="daily_counter_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.app_name} {self.name}={self.value}"
