"""The access history a backtest replays, with no content: searches (which record ids
they returned, keyed hashes of their terms) and what the policy knew about each evicted
record. Written and pruned by ``records.access_log``."""

from __future__ import annotations

from django.db import models

from .limits import APP_NAME_MAX, USER_ID_MAX


class SearchLog(models.Model):
    """One search: who, when, which record ids it returned, keyed hashes of its terms."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    searched_at = models.DateTimeField()
    record_ids = models.JSONField(default=list)
    term_hashes = models.JSONField(default=list)

    class Meta:
        app_label = "records"
        indexes = [
            models.Index(fields=["app_name", "searched_at"], name="searchlog_app_time"),
            models.Index(fields=["searched_at"], name="searchlog_time"),
            models.Index(fields=["app_name", "user_id"], name="searchlog_user"),
        ]

    def __str__(self) -> str:
        return f"search {self.pk} at {self.searched_at:%Y-%m-%d %H:%M}"


class EvictedRecord(models.Model):
    """What the policy knew about a record when it was evicted: the part of the replay
    its ``EvictionEvent`` (same ``record_id``) does not hold."""

    record_id = models.BigIntegerField()
    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    evicted_at = models.DateTimeField()
    created_at = models.DateTimeField()
    last_accessed_at = models.DateTimeField()
    hits = models.PositiveIntegerField(default=0)
    importance = models.FloatField(default=0.0)  # as stored, before any past-due decay
    pinned = models.BooleanField(default=False)
    due_at = models.DateTimeField(null=True, blank=True)
    slot = models.CharField(max_length=32, blank=True)
    stated_at = models.DateTimeField(null=True, blank=True)
    term_hashes = models.JSONField(default=list)
    # When no rule, classifier, caller or staff set its importance, the policy's
    # information_importance did (records.extract.follows_information): the information
    # score of its content (a number, no content), and whether its importance is that
    # score (written with the setting on) rather than the unmatched default. Lets a
    # backtest replay a candidate with the other setting. NULL / False otherwise.
    information = models.FloatField(null=True, blank=True)
    informed = models.BooleanField(default=False, db_default=False)  # older writers omit it

    class Meta:
        app_label = "records"
        indexes = [
            models.Index(fields=["app_name", "evicted_at"], name="evictedrecord_app_time"),
            models.Index(fields=["evicted_at"], name="evictedrecord_time"),
            models.Index(fields=["app_name", "user_id"], name="evictedrecord_user"),
            models.Index(fields=["record_id"], name="evictedrecord_record"),
        ]

    def __str__(self) -> str:
        return f"evicted record {self.record_id}"
