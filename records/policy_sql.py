"""The policy's rules in SQL: the score, "live" (pinned or within the TTL) and the
idle cutoff, as the pure policy (``records.policy``) defines them. Every query that
ranks, expires or retires goes through here: victims, search, the enforcement pass and
the session selectors. ``tests/records/test_victims.py`` keeps the two equal on random
data with ties; the pure policy is the oracle.

PostgreSQL computes the score as a float expression (``date_part``, not ``extract``,
which returns numeric and is several times slower). SQLite calls database functions
registered from ``records.policy.score_terms``, so both rank exactly as Python does.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection
from django.db.backends.signals import connection_created
from django.db.models import Case, FloatField, Q, Value, When
from django.dispatch import receiver

from . import policy as pure
from .models import Policy
from .timestamps import latest_allowed

# --- the score (``policy.score_terms``) ---------------------------------------------------


def _parse_sqlite_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _seconds_between(now: str, then: str) -> float:
    return (_parse_sqlite_datetime(now) - _parse_sqlite_datetime(then)).total_seconds()


def _sqlite_score(now, last, hits, importance, due, hl_hours, sat, wr, wf, wi, due_hl, term):
    params = _params_cache(hl_hours, sat, wr, wf, wi, due_hl)
    past_due = None if due is None else _seconds_between(now, due)
    s = pure.score_terms(_seconds_between(now, last), hits, importance, params, past_due)
    return {0: s.total, 1: s.recency, 2: s.frequency, 3: s.importance}[term]


_PARAMS: dict[tuple, pure.PolicyParams] = {}


def _params_cache(hl_hours, sat, wr, wf, wi, due_hl) -> pure.PolicyParams:
    key = (hl_hours, sat, wr, wf, wi, due_hl)
    params = _PARAMS.get(key)
    if params is None:
        params = pure.PolicyParams(
            half_life=timedelta(hours=hl_hours),
            saturation_hits=int(sat),
            w_recency=wr,
            w_frequency=wf,
            w_importance=wi,
            past_due_half_life=timedelta(hours=due_hl),
        )
        if len(_PARAMS) > 256:
            _PARAMS.clear()
        _PARAMS[key] = params
    return params


@receiver(connection_created)
def register_sqlite_functions(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_function(
            "memadmin_score", 12, _sqlite_score, deterministic=True
        )


# --- the score as SQL expressions ------------------------------------------------------

# PostgreSQL raises "value out of range: underflow" where Python quietly gives 0.0, so
# the recency exponent is capped (0.5^60 is ~1e-18) and importance below 1e-15 counts as
# 0; with weights of 0 or at least 1e-6 (validated) no product can underflow, and the
# differences from Python's exact values vanish when scores are rounded to 1e-9.
# Every term is double precision, as in Python: a numeric literal (``ln(1.0 + hits)``)
# would make PostgreSQL compute the logarithm in numeric, several times slower. The
# score is rounded to 9 decimals in numeric (as Python's round) and then cast back to
# double precision: the cast keeps order and ties, and sorts far faster than numeric.
_PG_RECENCY = (
    "power(0.5::float8, least(60.0::float8, greatest(0.0::float8, date_part('epoch', "
    "%(now)s::timestamptz - {t}last_accessed_at)) / 3600.0::float8 / %(hl)s::float8))"
)
_PG_FREQUENCY = "least(1.0::float8, ln(1.0::float8 + {t}hits) / ln(1.0::float8 + %(sat)s::float8))"
# Past its due date, importance halves every past-due half-life (``dhl``, 0 = never).
_PG_IMPORTANCE = (
    "(CASE WHEN {t}importance < 1e-15 THEN 0.0::float8"
    " WHEN %(dhl)s::float8 > 0.0::float8 AND {t}due_at < %(now)s::timestamptz"
    " THEN {t}importance * power(0.5::float8, least(60.0::float8, date_part('epoch',"
    " %(now)s::timestamptz - {t}due_at) / 3600.0::float8 / %(dhl)s::float8))"
    " ELSE {t}importance END)"
)
PG_RAW_SCORE = (
    "(%(wr)s::float8 * {recency} + %(wf)s::float8 * {frequency} + %(wi)s::float8 * {importance})"
)
_PG_SCORE = "round(" + PG_RAW_SCORE + "::numeric, 9)::float8"

_SQLITE_ARGS = (
    "%(now)s, {t}last_accessed_at, {t}hits, {t}importance, {t}due_at,"
    " %(hl)s, %(sat)s, %(wr)s, %(wf)s, %(wi)s, %(dhl)s"
)


def base_params(app_name: str, now: datetime, p: pure.PolicyParams) -> dict:
    ops = connection.ops
    return {
        "app": app_name,
        "now": now if connection.vendor == "postgresql" else ops.adapt_datetimefield_value(now),
        "cutoff": pure.ttl_cutoff(now, p)
        if connection.vendor == "postgresql"
        else ops.adapt_datetimefield_value(pure.ttl_cutoff(now, p)),
        "hl": p.half_life_hours,
        "sat": p.saturation_hits,
        "wr": p.w_recency,
        "wf": p.w_frequency,
        "wi": p.w_importance,
        "dhl": p.past_due_half_life_hours,
        "sup": p.supersede,
        "maxr": p.max_records,
        "maxt": p.max_tokens,
    }


def score_sql(table_alias: str = "") -> tuple[str, str, str, str]:
    """SQL expressions of (recency, frequency, importance, score) over the columns of
    ``table_alias``; importance is the decayed one the score uses."""
    t = f"{table_alias}." if table_alias else ""
    if connection.vendor == "postgresql":
        terms = {
            "recency": _PG_RECENCY.format(t=t),
            "frequency": _PG_FREQUENCY.format(t=t),
            "importance": _PG_IMPORTANCE.format(t=t),
        }
        return (*terms.values(), _PG_SCORE.format(t=t, **terms))
    # Connections opened before this module was imported did not get the function yet.
    connection.ensure_connection()
    register_sqlite_functions(None, connection)
    args = _SQLITE_ARGS.format(t=t)
    return (
        f"memadmin_score({args}, 1)",
        f"memadmin_score({args}, 2)",
        f"memadmin_score({args}, 3)",
        f"memadmin_score({args}, 0)",
    )


# The score rounded to 9 decimals in double precision, from the unrounded ``x``: the
# same value as round(x::numeric, 9)::float8 (which converts x to 15 significant digits,
# then rounds half away from zero), and ~6x cheaper. The two can only disagree when x * 1e9
# lies within ~1e-6 of a half (conversion and product errors; |x| <= 1 as the weights sum
# to 1), so there the numeric rounding is used itself.
PG_ROUND_9 = (
    "CASE WHEN abs({x} * 1e9::float8 - floor({x} * 1e9::float8) - 0.5::float8) < 1e-5::float8"
    " THEN round({x}::numeric, 9)::float8 ELSE round({x} * 1e9::float8) / 1e9::float8 END"
)


def pg_unrounded_score() -> str:
    return PG_RAW_SCORE.format(
        t="",
        recency=_PG_RECENCY.format(t=""),
        frequency=_PG_FREQUENCY.format(t=""),
        importance=_PG_IMPORTANCE.format(t=""),
    )


# --- live and expired (``policy.live``) ---------------------------------------------------


def live_q(now: datetime, p: pure.PolicyParams) -> Q:
    """Records the TTL keeps: pinned, or created no earlier than the cutoff."""
    return Q(pinned=True) | Q(created_at__gte=pure.ttl_cutoff(now, p))


def expired_q(now: datetime, p: pure.PolicyParams) -> Q:
    return Q(pinned=False, created_at__lt=pure.ttl_cutoff(now, p))


def live_sql(t: str = "", cutoff: str = "%(cutoff)s") -> str:
    """``live_q`` over the columns of alias ``t`` ("r." or ""); ``cutoff`` is a parameter
    or SQL expression for ``policy.ttl_cutoff``."""
    return f"({t}pinned OR {t}created_at >= {cutoff})"


def expired_sql(t: str = "", cutoff: str = "%(cutoff)s") -> str:
    return f"(NOT {t}pinned AND {t}created_at < {cutoff})"


def unpinned_live_sql(t: str = "", cutoff: str = "%(cutoff)s") -> str:
    """Live and not pinned: the records a cap may evict (spelt out, not as NOT pinned AND
    ``live_sql``, so the planner sees a plain range on created_at)."""
    return f"(NOT {t}pinned AND {t}created_at >= {cutoff})"


# PostgreSQL: the cutoff of the app's own TTL, read in the statement (search is one round
# trip); positional parameters: now, the app, the default TTL in days.
_POLICY_TABLE = Policy._meta.db_table
PG_APP_TTL_CUTOFF = f"""(%s - make_interval(days => COALESCE(
    (SELECT ttl_days FROM {_POLICY_TABLE} WHERE app_name = %s), %s)))"""

# With the named parameter ``cutoff`` of ``base_params``, as the victim queries use them.
LIVE_SQL = live_sql()
EXPIRED_SQL = expired_sql()
UNPINNED_LIVE_SQL = unpinned_live_sql()


# --- idle sessions (``policy.idle_cutoff``) ------------------------------------------------


def idle_cutoff_by_app(now: datetime, idle_days: dict[str, int]):
    """SQL expression: the ``last_update_time`` below which a session of its app is idle,
    from {app: its idle days} (apps without one: the default). Apps are few, so one CASE
    over them keeps every count a single query."""
    whens = [
        When(app_name=app, then=Value(pure.idle_cutoff(now, days)))
        for app, days in idle_days.items()
    ]
    default = Value(pure.idle_cutoff(now, pure.DEFAULTS.session_idle_days))
    if not whens:
        return default
    return Case(*whens, default=default, output_field=FloatField())


def idle_q(cutoff, now: datetime) -> Q:
    """Sessions idle as of ``now``: updated before ``cutoff`` (a number or
    ``idle_cutoff_by_app``), or stamped beyond any accepted timestamp
    (``records.timestamps.is_idle_stamp``)."""
    return Q(last_update_time__lt=cutoff) | Q(last_update_time__gt=latest_allowed(now.timestamp()))
