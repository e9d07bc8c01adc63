"""Memory records with their eviction metadata, eviction events and per-user totals."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .. import policy as pure
from ..search_text import reindex
from .limits import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX


class ImportanceSource(models.TextChoices):
    RULE = "rule", "rule"
    CLASSIFIER = "classifier", "classifier"
    STAFF = "staff", "staff"
    DEFAULT = "default", "default"
    CALLER = "caller", "caller"


class MemoryRecordManager(models.Manager):
    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for record in objs:
            record.search_tokens = reindex(record.content, record.author, record.search_tokens)
        return super().bulk_create(objs, *args, **kwargs)


class MemoryRecord(models.Model):
    """One long-term memory with the metadata eviction needs and its provenance.

    ``search_tokens`` is what search indexes (``records.search_text.index_tokens`` of the
    content and author), set on every save and bulk create, so the two can never disagree;
    its context layer (the turns before it, see ``search_text.reindex``) is kept.
    """

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    # Plain ids, not foreign keys: provenance outlives the session (see RetiredSession).
    source_session_id = models.CharField(max_length=SESSION_ID_MAX, blank=True)
    source_event_ids = models.JSONField(default=list, blank=True)
    # Hash of (session, event, part) so re-ingesting a session never duplicates a record.
    dedupe_key = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 - NULL = no key
    content = models.TextField()
    author = models.CharField(max_length=256, blank=True)
    # The role of the content as said (ADK's ``Content.role``: "user", "model"), which
    # search returns. NULL when none was given and for records stored before it was kept:
    # their entries derive it from the author (``memory_service.to_memory_entry``). NULL,
    # not "", so SQLite adds the column without rebuilding the table (see ``slot``).
    role = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001 - NULL = none
    entry_timestamp = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    last_accessed_at = models.DateTimeField()
    hits = models.PositiveIntegerField(default=0)
    importance = models.FloatField(default=0.0)
    importance_source = models.CharField(
        max_length=16, choices=ImportanceSource.choices, default=ImportanceSource.DEFAULT
    )
    importance_rule = models.CharField(max_length=64, blank=True, help_text="Rule that set it.")
    category = models.CharField(max_length=32, blank=True)
    pinned = models.BooleanField(default=False)
    tokens = models.PositiveIntegerField(default=0)
    # Commitments: when the importance starts to decay (PolicyParams.past_due_half_life).
    due_at = models.DateTimeField(null=True, blank=True)
    # What the record states a value of (records.slots); a newer statement supersedes it.
    # NULL for most records (and so SQLite adds the column without rebuilding the table,
    # which would drop the full-text and statistics triggers).
    slot = models.CharField(max_length=32, null=True, blank=True)  # noqa: DJ001 - NULL = none
    is_summary = models.BooleanField(default=False)
    # For summaries: [{"record_id": .., "session_id": ..}, ...] of every merged source.
    summary_sources = models.JSONField(default=list, blank=True)
    custom_metadata = models.JSONField(default=dict, blank=True)
    search_tokens = models.TextField(blank=True, default="", editable=False)

    objects = MemoryRecordManager()

    class Meta:
        indexes = [
            models.Index(fields=["app_name", "user_id"], name="record_user"),
            models.Index(fields=["app_name", "created_at"], name="record_app_created"),
            models.Index(
                fields=["app_name", "user_id", "source_session_id"], name="record_session"
            ),
            models.Index(
                fields=["app_name", "user_id", "slot"],
                name="record_slot",
                condition=Q(slot__isnull=False),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=0) & Q(importance__lte=1),
                name="record_importance_0_1",
            ),
            models.CheckConstraint(condition=Q(hits__gte=0), name="record_hits_nonneg"),
            models.CheckConstraint(condition=Q(tokens__gte=0), name="record_tokens_nonneg"),
            models.UniqueConstraint(
                fields=["app_name", "user_id", "dedupe_key"],
                condition=Q(dedupe_key__isnull=False),
                name="record_dedupe_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"record {self.pk} ({self.app_name}/{self.user_id})"

    def save(self, *args, **kwargs):
        fields = kwargs.get("update_fields")
        if fields is None or {"content", "author"} & set(fields):
            self.search_tokens = reindex(self.content, self.author, self.search_tokens)
            if fields is not None:
                kwargs["update_fields"] = {*fields, "search_tokens"}
        super().save(*args, **kwargs)

    def as_policy_record(self) -> pure.Record:
        return pure.Record(
            id=self.pk,
            created_at=self.created_at,
            last_accessed_at=self.last_accessed_at,
            hits=self.hits,
            importance=self.importance,
            pinned=self.pinned,
            tokens=self.tokens,
            due_at=self.due_at,
            slot=self.slot or "",
            stated_at=self.entry_timestamp,
        )


# The columns ``MemoryRecord.as_policy_record`` reads.
POLICY_RECORD_FIELDS = (
    "id",
    "created_at",
    "last_accessed_at",
    "hits",
    "importance",
    "pinned",
    "tokens",
    "due_at",
    "slot",
    "entry_timestamp",
)


class EvictionReason(models.TextChoices):
    EXPIRED = pure.EXPIRED, "expired"
    RECORD_CAP = pure.RECORD_CAP, "record cap"
    TOKEN_CAP = pure.TOKEN_CAP, "token cap"
    MANUAL = "manual", "manual"
    SUMMARISED = "summarised", "summarised"
    SUPERSEDED = pure.SUPERSEDED, "superseded"


class EvictionEvent(models.Model):
    """That a record was evicted, why and how it scored. Never its content."""

    record_id = models.BigIntegerField()
    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    reason = models.CharField(max_length=16, choices=EvictionReason.choices)
    recency = models.FloatField(null=True, blank=True)
    frequency = models.FloatField(null=True, blank=True)
    importance = models.FloatField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    policy_version = models.PositiveIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True, help_text="Sweep/enforce run, if any.")
    evicted_at = models.DateTimeField()
    # The evicted record's dedupe key (a hash of ids, not content), so that re-ingesting
    # its session does not bring an evicted memory back.
    dedupe_key = models.CharField(max_length=64, blank=True)
    # Superseded: the id of the newer record that replaced this one (provenance).
    superseded_by = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["evicted_at"], name="eviction_time"),
            models.Index(fields=["app_name", "user_id", "dedupe_key"], name="eviction_user_key"),
        ]

    def __str__(self) -> str:
        return f"evicted {self.record_id} ({self.reason})"


class UserMemoryStats(models.Model):
    """Per (app, user) totals of MemoryRecord, kept by database triggers.

    Pages (the users list, the overview) read these few thousand rows instead of
    aggregating every record on every request. Triggers on the records table keep
    them exact in the same transaction as each insert, delete or change of tokens or
    pin (migration 0005); a row goes when its user's last record does. Never written
    by application code. ``last_written`` is when a record was last stored for the user
    (a high-water mark: evicting that record does not move it back).
    """

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    records = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    pinned = models.BigIntegerField(default=0)
    last_written = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "user memory stats"
        constraints = [
            models.UniqueConstraint(fields=["app_name", "user_id"], name="user_stats_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.app_name}/{self.user_id}: {self.records} records"
