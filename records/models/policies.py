"""Per-app configuration: the eviction policy, its kept versions, importance rules."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .. import policy as pure
from .. import rules as pure_rules
from .limits import APP_NAME_MAX

# The model's defaults are the pure policy's (the "default" preset, the caps and TTL).
DEFAULTS = pure.DEFAULTS


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
        default=DEFAULTS.session_idle_days,
        help_text="Sessions idle this long are retired by the sweeper.",
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
            session_idle_days=self.session_idle_days,
        )

    @property
    def preset(self) -> str | None:
        """The preset the scoring values match, or None (custom values)."""
        try:
            return pure.preset_of(self.params())
        except pure.PolicyError:
            return None

    def clean(self) -> None:
        """The pure policy's validation (``records.policy.problems``), by field."""
        errors: dict[str, list[str]] = {}
        for field, messages in pure.problems(self.snapshot()).items():
            key = "__all__" if field == pure.WEIGHTS else field
            errors.setdefault(key, []).extend(pure.as_shown(m) for m in messages)
        if self.summarise_min_cluster is not None and self.summarise_min_cluster < 2:
            errors.setdefault("summarise_min_cluster", []).append("A cluster needs >= 2 records.")
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
                    field: [pure.as_shown(p) for p in messages]
                    for field, messages in problems.items()
                }
            )


def _unchecked_rule(row: ImportanceRule) -> pure_rules.Rule:
    """A Rule built without __post_init__ validation, so clean() can report every problem."""
    rule = object.__new__(pure_rules.Rule)
    for field in ("name", "pattern", "action", "importance", "pin", "category", "enabled"):
        object.__setattr__(rule, field, getattr(row, field))
    return rule


class ConfigGeneration(models.Model):
    """One row whose ``value`` changes (to a new random number) whenever any policy or
    importance rule row is inserted, updated or deleted, by database triggers
    (migration 0015), so however the change is made. Processes cache policies and rules
    keyed by it (``records.config_cache``) and read it on every ingest: a cache never
    serves a policy older than the change. Random, not a counter: a flushed table or a
    rolled-back change never brings back a value a cache already holds."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"configuration generation {self.value}"
