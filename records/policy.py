"""The eviction policy: pure Python, no Django, no I/O, ``now`` always passed in.

score(r) = w_r * recency + w_f * frequency + w_i * importance, where

    recency    = 0.5 ** (hours since r.last_accessed_at / half_life_hours)
    frequency  = min(1, ln(1 + r.hits) / ln(1 + saturation_hits))
    importance = assigned at write time, 0..1; once a record is past its due date
                 (commitments), it halves every ``past_due_half_life``

victims = expired records, then superseded ones (an older statement of a slot, such as
an old delivery address, when a newer one exists), then the lowest scores until
count <= max_records and tokens <= max_tokens; never a pinned record.

Named presets (``PRESETS``) hold the scoring settings: "article" is the article's exact
policy, "default" the one measured best (see the README's "Memory quality").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from .timestamps import is_idle_stamp

EXPIRED = "expired"
RECORD_CAP = "record_cap"
TOKEN_CAP = "token_cap"  # noqa: S105 - a reason, not a secret
SUPERSEDED = "superseded"

# Scores are rounded before they are compared, so that Python and the database,
# which evaluate the same formula with different floating-point libraries,
# rank records identically. 1e-9 is far below any difference that matters.
SCORE_DECIMALS = 9


# Smaller non-zero weights change no ranking and would underflow in the database.
MIN_WEIGHT = 1e-6


# Upper bounds of the numeric policy settings, by field: far beyond any real policy,
# and within what dates, durations and the database's integer columns can hold (a TTL
# of 10^12 days is no date at all). One definition: the pure policy, the model and
# both dashboard forms (policy and what-if) refuse with these sentences.
CENTURY_DAYS = 36_500
LIMITS: dict[str, tuple[float, str]] = {
    "ttl_days": (CENTURY_DAYS, f"TTL must be at most {CENTURY_DAYS} days (a century)"),
    "half_life_hours": (
        CENTURY_DAYS * 24,
        f"half-life must be at most {CENTURY_DAYS * 24} hours (a century)",
    ),
    "past_due_half_life_hours": (
        CENTURY_DAYS * 24,
        f"the past-due half-life must be at most {CENTURY_DAYS * 24} hours (a century)",
    ),
    "session_idle_days": (
        CENTURY_DAYS,
        f"session idle threshold must be at most {CENTURY_DAYS} days (a century)",
    ),
    "max_records": (10**9, "max records must be at most 1000000000"),
    "max_tokens": (10**9, "max tokens must be at most 1000000000"),
    "saturation_hits": (10**9, "frequency saturation must be at most 1000000000 hits"),
    "summarise_min_cluster": (10**9, "smallest cluster must be at most 1000000000 records"),
}


def as_shown(message: str) -> str:
    """A problem sentence capitalised, as the forms show it."""
    return message[:1].upper() + message[1:] + "."


def limit_message(field: str) -> str:
    """The sentence for ``field`` above its limit, as the forms show it."""
    return as_shown(LIMITS[field][1])


def limit_problems(values: dict[str, object]) -> dict[str, str]:
    """Each numeric value above its limit -> the sentence saying so. Values of another
    type are left to the caller's type check."""
    return {
        field: limit_message(field)
        for field, value in values.items()
        if field in LIMITS
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and not value <= LIMITS[field][0]  # NaN included
    }


class PolicyError(ValueError):
    """A policy value is out of range; the message says which and what is allowed."""


@dataclass(frozen=True, slots=True)
class PolicyParams:
    ttl: timedelta = timedelta(days=365)
    half_life: timedelta = timedelta(days=30)
    max_records: int = 500
    max_tokens: int = 40_000
    # The default preset; the article's are 0.4 / 0.2 / 0.4. Measured: hits counted from
    # every search (a preload with the session's first turn touches whatever matched)
    # reward incidental matches, so frequency weighs 0 and last use counts via recency.
    w_recency: float = 0.5
    w_frequency: float = 0.0
    w_importance: float = 0.5
    saturation_hits: int = 100
    # How many half-lives old a new record starts (the article: 1, so that creation
    # does not count as a retrieval; measured, 0 answers more later questions).
    fresh_start: float = 0.0
    # A commitment's importance halves this often once it is past its due date (an
    # order delivered, an appointment kept); 0 keeps it for ever (the article).
    past_due_half_life: timedelta = timedelta(days=14)
    # A newer statement of a slot (records.slots) retires the older ones (the article:
    # no; every statement stays until it scores lowest).
    supersede: bool = True
    # Text no rule matches gets importance from the information it carries (0.05-0.45,
    # records.information) instead of one flat value (the article: 0.2 for all).
    information_importance: bool = True
    # Sessions not updated for this many days are idle: the sweeper retires them.
    session_idle_days: int = 7

    def __post_init__(self) -> None:
        errors = validate_params(self)
        if errors:
            raise PolicyError("; ".join(errors))

    @property
    def half_life_hours(self) -> float:
        return self.half_life.total_seconds() / 3600.0

    @property
    def past_due_half_life_hours(self) -> float:
        return self.past_due_half_life.total_seconds() / 3600.0


WEIGHTS = "weights"  # the key of problems with the three weights together


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def problems(values: dict[str, object]) -> dict[str, list[str]]:
    """Every problem with policy values, by field, as sentences a person can act on.

    ``values`` are named as the model's fields (``ttl_days``, ``half_life_hours``, ...,
    ``w_recency``); missing ones and values of another type are skipped (the caller's
    type check speaks for those). Weight problems are under ``WEIGHTS``. The one
    definition of valid: ``PolicyParams`` and ``records.models.Policy.clean`` use it.
    """
    out: dict[str, list[str]] = {}

    def check(field: str, ok, message: str) -> None:
        value = values.get(field)
        if _number(value) and not ok(value):
            out.setdefault(field, []).append(message)

    check("ttl_days", lambda v: v > 0, "TTL must be positive")
    check("half_life_hours", lambda v: v > 0, "half-life must be positive")
    # Durations are kept to the microsecond (timedelta): less than a second would round
    # to nothing, or to a value no one meant, after it was saved.
    check("ttl_days", lambda v: v <= 0 or v * 86_400 >= 1, "TTL must be at least a second")
    check(
        "half_life_hours", lambda v: v <= 0 or v * 3_600 >= 1, "half-life must be at least a second"
    )
    check("max_records", lambda v: v >= 1, "max records must be at least 1")
    check("max_tokens", lambda v: v >= 1, "max tokens must be at least 1")
    check("saturation_hits", lambda v: v >= 1, "frequency saturation must be at least 1 hit")
    check("session_idle_days", lambda v: v >= 1, "session idle threshold must be at least 1 day")
    for field in limit_problems(values):
        out.setdefault(field, []).append(LIMITS[field][1])
    check(
        "fresh_start",
        lambda v: math.isfinite(v) and 0 <= v <= 10,
        "fresh start must be from 0 to 10 half-lives",
    )
    check(
        "past_due_half_life_hours",
        lambda v: v == 0 or v * 3_600 >= 1,
        "the past-due half-life must be 0 (never decays) or at least a second",
    )
    weights = [values.get(f) for f in ("w_recency", "w_frequency", "w_importance")]
    if all(_number(w) for w in weights):
        if any(not math.isfinite(w) or w < 0 for w in weights):
            out[WEIGHTS] = ["weights must be finite and at least 0"]
        elif any(0 < w < MIN_WEIGHT for w in weights):
            out[WEIGHTS] = [f"each weight must be 0 or at least {MIN_WEIGHT}"]
        elif not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
            out[WEIGHTS] = [f"weights must sum to 1 (they sum to {sum(weights):.4f})"]
    return out


def field_values(p: PolicyParams) -> dict[str, object]:
    """``p``'s values named and measured as the model's fields."""
    return {
        "ttl_days": p.ttl / timedelta(days=1),
        "half_life_hours": p.half_life_hours,
        "max_records": p.max_records,
        "max_tokens": p.max_tokens,
        "w_recency": p.w_recency,
        "w_frequency": p.w_frequency,
        "w_importance": p.w_importance,
        "saturation_hits": p.saturation_hits,
        "fresh_start": p.fresh_start,
        "past_due_half_life_hours": p.past_due_half_life_hours,
        "supersede": p.supersede,
        "information_importance": p.information_importance,
        "session_idle_days": p.session_idle_days,
    }


def validate_params(p: PolicyParams) -> list[str]:
    """Every problem with ``p`` as a sentence a person can act on."""
    return [message for messages in problems(field_values(p)).values() for message in messages]


# The defaults: the "default" preset, the caps, the TTL and the idle threshold. The
# model's field defaults and every page that shows an app without a policy read these.
DEFAULTS = PolicyParams()


@dataclass(frozen=True, slots=True)
class Record:
    """What the policy needs to know about one memory record."""

    id: int | str
    created_at: datetime
    last_accessed_at: datetime
    hits: int = 0
    importance: float = 0.0
    pinned: bool = False
    tokens: int = 0
    due_at: datetime | None = None  # commitments: when importance starts to decay
    slot: str = ""  # what the record states a value of (records.slots), if anything
    stated_at: datetime | None = None  # when it was said; None: created_at

    @property
    def said_at(self) -> datetime:
        return self.created_at if self.stated_at is None else self.stated_at


@dataclass(frozen=True, slots=True)
class Score:
    recency: float
    frequency: float
    importance: float
    total: float


@dataclass(frozen=True, slots=True)
class Victim:
    id: int | str
    reason: str  # EXPIRED, SUPERSEDED, RECORD_CAP or TOKEN_CAP
    score: Score
    tokens: int
    superseded_by: int | str | None = None  # SUPERSEDED: the newer record's id


# The settings a preset decides; caps and TTL stay each app's own sizing.
PRESET_FIELDS = (
    "half_life",
    "w_recency",
    "w_frequency",
    "w_importance",
    "saturation_hits",
    "fresh_start",
    "past_due_half_life",
    "supersede",
    "information_importance",
)
ARTICLE = "article"
DEFAULT = "default"
PRESETS: dict[str, dict] = {
    DEFAULT: {f: getattr(PolicyParams(), f) for f in PRESET_FIELDS},
    ARTICLE: {
        "half_life": timedelta(days=30),
        "w_recency": 0.4,
        "w_frequency": 0.2,
        "w_importance": 0.4,
        "saturation_hits": 100,
        "fresh_start": 1.0,
        "past_due_half_life": timedelta(0),
        "supersede": False,
        "information_importance": False,
    },
}
PRESET_DESCRIPTIONS = {
    DEFAULT: "measured best on the quality benchmark",
    ARTICLE: "the article's exact policy",
}


def preset(name: str, base: PolicyParams | None = None) -> PolicyParams:
    """``base`` (caps and TTL) with the scoring settings of the preset ``name``."""
    if name not in PRESETS:
        raise PolicyError(f"no preset {name!r}; choose one of {', '.join(PRESETS)}")
    return replace(base or PolicyParams(), **PRESETS[name])


def preset_of(p: PolicyParams) -> str | None:
    """The preset whose scoring settings ``p`` has, or None (custom values)."""
    for name, values in PRESETS.items():
        if all(getattr(p, f) == v for f, v in values.items()):
            return name
    return None


def fresh_last_accessed(now: datetime, p: PolicyParams) -> datetime:
    """When a new record counts as last read: ``fresh_start`` half-lives ago."""
    return now - p.half_life * p.fresh_start


def fresh(
    id: int | str,
    now: datetime,
    params: PolicyParams,
    *,
    importance: float,
    pinned: bool = False,
    tokens: int = 0,
) -> Record:
    return Record(
        id=id,
        created_at=now,
        last_accessed_at=fresh_last_accessed(now, params),
        hits=0,
        importance=importance,
        pinned=pinned,
        tokens=tokens,
    )


def score_terms(
    seconds_since_access: float,
    hits: int,
    importance: float,
    p: PolicyParams,
    seconds_past_due: float | None = None,
) -> Score:
    """The blended score from plain numbers (shared with the SQLite database function).

    ``seconds_past_due`` is None for a record without a due date (negative: not due yet).
    """
    return Score(
        *_parts(seconds_since_access, hits, importance, seconds_past_due, *_blend_constants(p))
    )


def _blend_constants(p: PolicyParams) -> tuple[float, float, float, float, float, float]:
    """What ``score_terms`` derives from ``p``: taken once per ``HybridPolicy``."""
    return (
        p.half_life_hours,
        math.log1p(p.saturation_hits),
        p.past_due_half_life_hours,
        p.w_recency,
        p.w_frequency,
        p.w_importance,
    )


def _parts(
    seconds_since_access: float,
    hits: int,
    importance: float,
    seconds_past_due: float | None,
    half_life_hours: float,
    log_saturation: float,
    past_due_half_life_hours: float,
    w_recency: float,
    w_frequency: float,
    w_importance: float,
) -> tuple[float, float, float, float]:
    """(recency, frequency, importance, total): the formula, once."""
    # A record touched "after" now (a preview as of the past) counts as just touched.
    hours = max(0.0, seconds_since_access / 3600.0)
    recency = 0.5 ** (hours / half_life_hours)
    frequency = min(1.0, math.log1p(max(hits, 0)) / log_saturation)
    if seconds_past_due is not None and seconds_past_due > 0 and past_due_half_life_hours > 0:
        importance = importance * 0.5 ** (seconds_past_due / 3600.0 / past_due_half_life_hours)
    total = w_recency * recency + w_frequency * frequency + w_importance * importance
    return recency, frequency, importance, round_score(total)


_NINE_DECIMALS = Decimal(1).scaleb(-SCORE_DECIMALS)


def round_score(x: float) -> float:
    """``x`` to ``SCORE_DECIMALS`` decimals as PostgreSQL's ``round(x::numeric, 9)``
    gives it (``policy_sql.PG_ROUND_9``): ``x`` to 15 significant digits, then half away
    from zero. Python's ``round`` rounds the exact binary value half to even, so the two
    differ only within a hair of a half (``x * 1e9`` within 1e-5 of one): there the
    decimal rounding is done as PostgreSQL does it; elsewhere ``round`` gives the same
    number. A 1e-9 difference would decide ties, so victims, differently.

    Away from a half, the nearest integer to ``x * 1e9`` over 1e9 is ``round(x, 9)``
    for a score (0..1: the same integer as the exact product's, then one correctly
    rounded division),
    and takes a third less time than ``round`` on this hot path (every score)."""
    scaled = x * 1e9
    frac = scaled % 1.0  # scaled - floor(scaled), exactly
    if 0.49999 < frac < 0.50001:
        exact = Decimal(f"{x:.15g}").quantize(_NINE_DECIMALS, rounding=ROUND_HALF_UP)
        return float(exact)
    return (scaled - frac + (frac > 0.5)) / 1e9


def ttl_cutoff(now: datetime, p: PolicyParams) -> datetime:
    """Unpinned records created before this moment are expired."""
    return now - p.ttl


def live(r: Record, now: datetime, p: PolicyParams) -> bool:
    """A record the TTL keeps: pinned, or created no earlier than the TTL cutoff.
    (``records.policy_sql.live_q`` / ``live_sql`` say the same to the database.)"""
    return r.pinned or r.created_at >= ttl_cutoff(now, p)


def idle_cutoff(now: datetime, idle_days: int) -> float:
    """Sessions last updated before this moment (epoch seconds, as ADK stamps) are idle."""
    return (now - timedelta(days=idle_days)).timestamp()


def session_idle(last_update: float, now: datetime, idle_days: int) -> bool:
    """Is a session last updated at ``last_update`` idle as of ``now``? (Stamps beyond
    anything accepted count as idle: ``records.timestamps.is_idle_stamp``.)"""
    return is_idle_stamp(last_update, idle_cutoff(now, idle_days), now.timestamp())


class HybridPolicy:
    """TTL, then pins, then capacity caps with victims chosen by the blended score."""

    def __init__(self, params: PolicyParams | None = None) -> None:
        self._params = params or PolicyParams()
        self._constants = _blend_constants(self._params)

    @property
    def params(self) -> PolicyParams:
        return self._params

    def live(self, r: Record, now: datetime) -> bool:
        return live(r, now, self.params)

    def expired(self, r: Record, now: datetime) -> bool:
        return not live(r, now, self.params)

    def score(self, r: Record, now: datetime) -> Score:
        past_due = None if r.due_at is None else (now - r.due_at).total_seconds()
        return Score(
            *_parts(
                (now - r.last_accessed_at).total_seconds(),
                r.hits,
                r.importance,
                past_due,
                *self._constants,
            )
        )

    def total(self, r: Record, now: datetime) -> float:
        """``score(r, now).total`` without the ``Score`` (the backtest scores ~2,000
        records per user and replay)."""
        past_due = None if r.due_at is None else (now - r.due_at).total_seconds()
        return _parts(
            (now - r.last_accessed_at).total_seconds(),
            r.hits,
            r.importance,
            past_due,
            *self._constants,
        )[3]

    def ranked(self, records: Iterable[Record], now: datetime) -> list[tuple[Record, Score]]:
        """Unexpired records, lowest score first; ties broken by age, then id."""
        live = [(r, self.score(r, now)) for r in records if not self.expired(r, now)]
        live.sort(key=lambda rs: (rs[1].total, rs[0].last_accessed_at, rs[0].created_at, rs[0].id))
        return live

    def superseded(self, records: Iterable[Record], now: datetime) -> dict[int | str, int | str]:
        """{id of an unpinned live record: id of the newest live record of its slot}."""
        if not self.params.supersede:
            return {}
        newest: dict[str, Record] = {}
        slotted = [r for r in records if r.slot and not self.expired(r, now)]
        for r in slotted:
            best = newest.get(r.slot)
            if best is None or (r.said_at, r.id) > (best.said_at, best.id):
                newest[r.slot] = r
        return {
            r.id: newest[r.slot].id for r in slotted if not r.pinned and r.id != newest[r.slot].id
        }

    def victims(self, records: Sequence[Record], now: datetime) -> list[Victim]:
        p = self.params
        out: list[Victim] = []
        live_records = []
        for r in records:
            if self.expired(r, now):
                out.append(Victim(r.id, EXPIRED, self.score(r, now), r.tokens))
            else:
                live_records.append(r)
        out.sort(key=lambda v: v.id)  # expired first, in id order whatever the input order
        newer = self.superseded(live_records, now)
        retired = [
            Victim(r.id, SUPERSEDED, self.score(r, now), r.tokens, newer[r.id])
            for r in live_records
            if r.id in newer
        ]
        out.extend(sorted(retired, key=lambda v: v.id))
        ranked = self.ranked([r for r in live_records if r.id not in newer], now)
        count = len(ranked)
        tokens = sum(r.tokens for r, _ in ranked)
        for r, s in ranked:
            if count <= p.max_records and tokens <= p.max_tokens:
                break
            if r.pinned:
                continue  # never a victim, even when the caps cannot be met
            reason = RECORD_CAP if count > p.max_records else TOKEN_CAP
            out.append(Victim(r.id, reason, s, r.tokens))
            count -= 1
            tokens -= r.tokens
        return out

    def victim_ids(self, records: Sequence[Record], now: datetime) -> list[int | str]:
        return [v.id for v in self.victims(records, now)]
