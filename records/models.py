"""The memory domain: records with eviction metadata, ADK sessions, artifacts, policies."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from . import policy as pure
from . import rules as pure_rules
from .search_text import reindex

APP_NAME_MAX = 128
USER_ID_MAX = 256
SESSION_ID_MAX = 256


# The model's defaults are the pure policy's (the "default" preset, the caps and TTL).
DEFAULTS = pure.PolicyParams()


class Policy(models.Model):
    """The eviction policy of one app. Every change bumps ``version`` and is kept."""

    app_name = models.CharField(max_length=APP_NAME_MAX, unique=True)
    version = models.PositiveIntegerField(default=1)
    ttl_days = models.PositiveIntegerField(
        default=DEFAULTS.ttl.days, help_text="Hard TTL of unpinned records."
    )
    half_life_hours = models.FloatField(
        default=DEFAULTS.half_life_hours, help_text="Recency half-life."
    )
    max_records = models.PositiveIntegerField(
        default=DEFAULTS.max_records, help_text="Records per user."
    )
    max_tokens = models.PositiveIntegerField(
        default=DEFAULTS.max_tokens, help_text="Tokens per user."
    )
    w_recency = models.FloatField(default=DEFAULTS.w_recency)
    w_frequency = models.FloatField(default=DEFAULTS.w_frequency)
    w_importance = models.FloatField(default=DEFAULTS.w_importance)
    saturation_hits = models.PositiveIntegerField(
        default=DEFAULTS.saturation_hits, help_text="Hits at which the frequency term reaches 1."
    )
    fresh_start = models.FloatField(
        default=DEFAULTS.fresh_start,
        help_text="Half-lives a new record starts old (the article: 1; 0 counts it just read).",
    )
    past_due_half_life_hours = models.FloatField(
        default=DEFAULTS.past_due_half_life_hours,
        help_text="Past its due date, a commitment's importance halves this often (0: never).",
    )
    supersede = models.BooleanField(
        default=DEFAULTS.supersede,
        help_text="A newer statement of a slot (e.g. the delivery address) retires the older.",
    )
    information_importance = models.BooleanField(
        default=DEFAULTS.information_importance,
        help_text="Text no rule matches scores by the information it carries (else 0.2).",
    )
    session_idle_days = models.PositiveIntegerField(
        default=7, help_text="Sessions idle this long are retired by the sweeper."
    )
    summarise = models.BooleanField(
        default=False, help_text="Merge clusters of low-score victims into a summary first."
    )
    summarise_min_cluster = models.PositiveIntegerField(default=5)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name_plural = "policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(ttl_days__gte=1)
                & Q(half_life_hours__gt=0)
                & Q(max_records__gte=1)
                & Q(max_tokens__gte=1)
                & Q(saturation_hits__gte=1)
                & Q(fresh_start__gte=0)
                & Q(fresh_start__lte=10)
                & Q(past_due_half_life_hours__gte=0)
                & Q(w_recency__gte=0)
                & Q(w_frequency__gte=0)
                & Q(w_importance__gte=0)
                & Q(session_idle_days__gte=1)
                & Q(summarise_min_cluster__gte=2),
                name="policy_values_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.app_name} v{self.version}"

    def params(self) -> pure.PolicyParams:
        return pure.PolicyParams(
            ttl=timedelta(days=self.ttl_days),
            half_life=timedelta(hours=self.half_life_hours),
            max_records=self.max_records,
            max_tokens=self.max_tokens,
            w_recency=self.w_recency,
            w_frequency=self.w_frequency,
            w_importance=self.w_importance,
            saturation_hits=self.saturation_hits,
            fresh_start=self.fresh_start,
            past_due_half_life=timedelta(hours=self.past_due_half_life_hours),
            supersede=self.supersede,
            information_importance=self.information_importance,
        )

    @property
    def preset(self) -> str | None:
        """The preset the scoring values match, or None (custom values)."""
        try:
            return pure.preset_of(self.params())
        except pure.PolicyError:
            return None

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if self.ttl_days is not None and self.ttl_days < 1:
            errors.setdefault("ttl_days", []).append("TTL must be at least 1 day.")
        if self.half_life_hours is not None and not self.half_life_hours > 0:
            errors.setdefault("half_life_hours", []).append("Half-life must be positive.")
        if self.session_idle_days is not None and self.session_idle_days < 1:
            errors.setdefault("session_idle_days", []).append("Idle threshold must be >= 1 day.")
        if self.fresh_start is not None and not 0 <= self.fresh_start <= 10:
            errors.setdefault("fresh_start", []).append(
                "Fresh start must be from 0 to 10 half-lives."
            )
        if self.past_due_half_life_hours is not None and not self.past_due_half_life_hours >= 0:
            errors.setdefault("past_due_half_life_hours", []).append(
                "The past-due half-life must be 0 (never decays) or positive."
            )
        if self.summarise_min_cluster is not None and self.summarise_min_cluster < 2:
            errors.setdefault("summarise_min_cluster", []).append("A cluster needs >= 2 records.")
        for name in ("max_records", "max_tokens", "saturation_hits"):
            value = getattr(self, name)
            if value is not None and value < 1:
                errors.setdefault(name, []).append("Must be at least 1.")
        for name, problem in pure.limit_problems(self.snapshot()).items():
            errors.setdefault(name, []).append(problem)
        weights = [self.w_recency, self.w_frequency, self.w_importance]
        if all(w is not None for w in weights):
            if any(w < 0 for w in weights):
                errors.setdefault("__all__", []).append("Weights must be at least 0.")
            elif any(0 < w < pure.MIN_WEIGHT for w in weights):
                errors.setdefault("__all__", []).append(
                    f"Each weight must be 0 or at least {pure.MIN_WEIGHT}."
                )
            elif abs(sum(weights) - 1.0) > 1e-6:
                errors.setdefault("__all__", []).append(
                    f"Weights must sum to 1; recency + frequency + importance = {sum(weights):.4f}."
                )
        if errors:
            raise ValidationError(errors)

    def snapshot(self) -> dict:
        return {f: getattr(self, f) for f in POLICY_FIELDS}


POLICY_FIELDS = (
    "ttl_days",
    "half_life_hours",
    "max_records",
    "max_tokens",
    "w_recency",
    "w_frequency",
    "w_importance",
    "saturation_hits",
    "fresh_start",
    "past_due_half_life_hours",
    "supersede",
    "information_importance",
    "session_idle_days",
    "summarise",
    "summarise_min_cluster",
)


def preset_values(name: str) -> dict:
    """The model's values of the preset ``name``: what choosing it on a policy changes."""
    params = pure.preset(name)
    values = {
        "half_life_hours": params.half_life_hours,
        "w_recency": params.w_recency,
        "w_frequency": params.w_frequency,
        "w_importance": params.w_importance,
        "saturation_hits": params.saturation_hits,
        "fresh_start": params.fresh_start,
        "past_due_half_life_hours": params.past_due_half_life_hours,
        "supersede": params.supersede,
        "information_importance": params.information_importance,
    }
    return values


class PolicyVersion(models.Model):
    """An immutable copy of every version a policy has had (including the current one)."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    version = models.PositiveIntegerField()
    values = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["app_name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["app_name", "version"], name="policy_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.app_name} v{self.version}"


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


class AgentSession(models.Model):
    """An ADK session. Session-scoped state only; app and user state live apart."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    # ADK's float seconds, kept exactly so sessions round-trip.
    last_update_time = models.FloatField()
    # Bumped on every write; a caller holding an older revision is stale.
    revision = models.PositiveBigIntegerField(default=0)
    event_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app_name", "user_id", "session_id"], name="session_unique"
            ),
            # ADK cannot address a session with an empty id; refuse it for every writer.
            models.CheckConstraint(
                condition=~Q(app_name="") & ~Q(user_id="") & ~Q(session_id=""),
                name="session_ids_not_empty",
            ),
        ]
        indexes = [
            models.Index(fields=["app_name", "last_update_time"], name="session_app_updated"),
            models.Index(
                fields=["app_name", "user_id", "last_update_time"], name="session_user_updated"
            ),
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} ({self.app_name}/{self.user_id})"


class SessionEvent(models.Model):
    """One ADK event, whole, as JSON, with the columns queries need."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="events")
    position = models.PositiveIntegerField()
    event_id = models.CharField(max_length=128)
    invocation_id = models.CharField(max_length=256, blank=True)
    author = models.CharField(max_length=256, blank=True)
    timestamp = models.FloatField()
    is_compaction = models.BooleanField(default=False)
    data = models.JSONField()

    class Meta:
        ordering = ["session", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="event_position_unique"),
        ]
        indexes = [
            models.Index(fields=["session", "event_id"], name="event_session_id"),
            models.Index(fields=["session", "timestamp"], name="event_session_ts"),
        ]

    def __str__(self) -> str:
        return f"event {self.event_id}"


class AppState(models.Model):
    """``app:`` state, shared by every session of an app (keys stored without prefix)."""

    app_name = models.CharField(max_length=APP_NAME_MAX, unique=True)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(app_name=""), name="app_state_app_not_empty"),
        ]

    def __str__(self) -> str:
        return f"app state {self.app_name}"


class UserState(models.Model):
    """``user:`` state, shared by a user's sessions in one app (keys stored without prefix)."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app_name", "user_id"], name="user_state_unique"),
            models.CheckConstraint(
                condition=~Q(app_name="") & ~Q(user_id=""), name="user_state_ids_not_empty"
            ),
        ]

    def __str__(self) -> str:
        return f"user state {self.app_name}/{self.user_id}"


class Artifact(models.Model):
    """One version of an ADK artifact. ``session_id`` is empty for user-scoped artifacts."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX, blank=True)
    filename = models.CharField(max_length=512)
    version = models.PositiveIntegerField()
    # The genai Part as JSON, without inline bytes (those live in ``data``).
    part = models.JSONField(default=dict)
    data = models.BinaryField(null=True, blank=True)
    mime_type = models.CharField(max_length=255, blank=True)
    custom_metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app_name", "user_id", "session_id", "filename", "version"],
                name="artifact_version_unique",
            ),
            # session_id may be empty (user-scoped); the owner and the name may not.
            models.CheckConstraint(
                condition=~Q(app_name="") & ~Q(user_id="") & ~Q(filename=""),
                name="artifact_ids_not_empty",
            ),
        ]
        indexes = [
            models.Index(fields=["app_name", "user_id", "session_id"], name="artifact_scope"),
        ]

    def __str__(self) -> str:
        return f"{self.filename} v{self.version}"


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


class RetiredSession(models.Model):
    """Tombstone of a session the sweeper retired, so record provenance still resolves."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX)
    created_at = models.DateTimeField()
    last_update_time = models.FloatField()
    event_count = models.PositiveIntegerField()
    retired_at = models.DateTimeField()
    run_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app_name", "user_id", "session_id"], name="retired_session_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"retired {self.session_id}"


class ImportanceRule(models.Model):
    """A staff-editable rule; overrides the shipped default of the same name.

    ``app_name`` empty means every app; an app's own rule wins over an all-apps rule.
    """

    ACTIONS = [(pure_rules.SCORE, "score"), (pure_rules.DROP, "drop")]

    app_name = models.CharField(max_length=APP_NAME_MAX, blank=True)
    name = models.CharField(max_length=64)
    pattern = models.TextField(help_text="RE2 regular expression, matched case-insensitively.")
    action = models.CharField(max_length=8, choices=ACTIONS, default=pure_rules.SCORE)
    importance = models.FloatField(null=True, blank=True)
    pin = models.BooleanField(default=False)
    category = models.CharField(max_length=32, blank=True)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["app_name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["app_name", "name"], name="rule_name_unique"),
            models.CheckConstraint(
                condition=Q(importance__isnull=True)
                | (Q(importance__gte=0) & Q(importance__lte=1)),
                name="rule_importance_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.app_name or '*'}:{self.name}"

    def as_rule(self) -> pure_rules.Rule:
        return pure_rules.Rule(
            name=self.name,
            pattern=self.pattern,
            action=self.action,
            importance=self.importance,
            pin=self.pin,
            category=self.category,
            enabled=self.enabled,
        )

    def problems(self) -> list[str]:
        """Why this row cannot be used as a rule (e.g. a pattern stored before the rule
        engine became RE2); empty when it can."""
        return pure_rules.validate_rule(_unchecked_rule(self))

    def clean(self) -> None:
        problems = pure_rules.rule_problems(_unchecked_rule(self))
        if problems:
            # Each problem next to its field, as a sentence.
            raise ValidationError(
                {
                    field: [p[:1].upper() + p[1:] + "." for p in messages]
                    for field, messages in problems.items()
                }
            )


def _unchecked_rule(row: ImportanceRule) -> pure_rules.Rule:
    """A Rule built without __post_init__ validation, so clean() can report every problem."""
    rule = object.__new__(pure_rules.Rule)
    for field in ("name", "pattern", "action", "importance", "pin", "category", "enabled"):
        object.__setattr__(rule, field, getattr(row, field))
    return rule


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


# The backtest's access history lives in its own module; imported here so Django finds it.
from .access_log import EvictedRecord, SearchLog  # noqa: E402, F401
