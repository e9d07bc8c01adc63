"""Sessions: idle and active per app, one session's events and artifacts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, FloatField, Q, Value, When
from django.db.models.functions import Length

from ..events import describe_event
from ..models import AgentSession, Artifact, Policy, SessionEvent
from ..timestamps import is_idle_stamp, latest_allowed, readable

DEFAULT_IDLE_DAYS = Policy._meta.get_field("session_idle_days").default
SESSION_STATES = ("idle", "active")
ARTIFACT_LIMIT = 200


def idle_cutoff(now: datetime):
    """SQL expression: the ``last_update_time`` below which a session of its app is idle.

    Idle thresholds are per app (``Policy.session_idle_days``); apps are few, so one
    CASE over them keeps every count a single query.
    """
    now_ts = now.timestamp()
    whens = [
        When(app_name=app, then=Value(now_ts - days * 86400.0))
        for app, days in Policy.objects.values_list("app_name", "session_idle_days")
    ]
    default = Value(now_ts - DEFAULT_IDLE_DAYS * 86400.0)
    if not whens:
        return default
    return Case(*whens, default=default, output_field=FloatField())


def idle_filter(cutoff, now: datetime) -> Q:
    """Sessions idle as of ``now``: updated before ``cutoff`` (a number or ``idle_cutoff``),
    or stamped beyond any accepted timestamp (``records.timestamps.is_idle_stamp``)."""
    return Q(last_update_time__lt=cutoff) | Q(last_update_time__gt=latest_allowed(now.timestamp()))


@dataclass(frozen=True)
class AppSessions:
    app_name: str
    total: int
    idle: int

    @property
    def active(self) -> int:
        return self.total - self.idle


def app_session_counts(now: datetime) -> list[AppSessions]:
    """Per app: sessions, and how many are idle past the app's threshold. Two queries."""
    rows = (
        AgentSession.objects.values("app_name")
        .annotate(
            total=Count("id"),
            idle=Count("id", filter=idle_filter(idle_cutoff(now), now)),
        )
        .order_by("app_name")
    )
    return [AppSessions(r["app_name"], r["total"], r["idle"]) for r in rows]


@dataclass(frozen=True)
class SessionRow:
    pk: int
    app_name: str
    user_id: str
    session_id: str
    created_at: datetime
    last_update: datetime | None  # None: a stored stamp that is no representable moment
    last_update_raw: float
    event_count: int
    idle: bool


def session_page(
    now: datetime,
    *,
    app_name: str = "",
    state: str = "",
    search: str = "",
    page: int | str = 1,
    per_page: int = 50,
) -> Page:
    """Sessions, most recently updated first, with their idle flag. Three queries."""
    qs = AgentSession.objects.annotate(
        idle=Case(
            When(idle_filter(idle_cutoff(now), now), then=Value(True)),
            default=Value(False),
        )
    )
    if app_name:
        qs = qs.filter(app_name=app_name)
    if state in SESSION_STATES:
        qs = qs.filter(idle=state == "idle")
    if search:
        qs = qs.filter(Q(user_id__icontains=search) | Q(session_id__icontains=search))
    qs = qs.order_by("-last_update_time", "-id").values(
        "pk",
        "app_name",
        "user_id",
        "session_id",
        "created_at",
        "last_update_time",
        "event_count",
        "idle",
    )
    page_obj = Paginator(qs, per_page).get_page(page)
    page_obj.object_list = [
        SessionRow(
            pk=r["pk"],
            app_name=r["app_name"],
            user_id=r["user_id"],
            session_id=r["session_id"],
            created_at=r["created_at"],
            last_update=readable(r["last_update_time"]),
            last_update_raw=r["last_update_time"],
            event_count=r["event_count"],
            idle=bool(r["idle"]),
        )
        for r in page_obj.object_list
    ]
    return page_obj


def is_idle(session: AgentSession, now: datetime) -> bool:
    policy = Policy.objects.filter(app_name=session.app_name).only("session_idle_days").first()
    days = policy.session_idle_days if policy else DEFAULT_IDLE_DAYS
    cutoff = (now - timedelta(days=days)).timestamp()
    return is_idle_stamp(session.last_update_time, cutoff, now.timestamp())


def session_events_page(session: AgentSession, *, page: int | str = 1, per_page: int = 100):
    """The session's events in order, read for people (EventView). Two queries."""
    qs = SessionEvent.objects.filter(session=session).order_by("position")
    page_obj = Paginator(qs, per_page).get_page(page)
    page_obj.object_list = [describe_event(e.data) for e in page_obj.object_list]
    return page_obj


@dataclass(frozen=True)
class ArtifactRow:
    filename: str
    version: int
    size: int | None  # bytes stored here; None for a reference to a file elsewhere
    mime_type: str
    user_scoped: bool
    created_at: datetime


def artifacts_for_session(session: AgentSession) -> tuple[list[ArtifactRow], bool]:
    """The session's artifacts and the user's user-scoped ones, every version.

    Returns (rows, truncated): at most ARTIFACT_LIMIT rows, sizes computed in SQL.
    """
    rows = (
        Artifact.objects.filter(app_name=session.app_name, user_id=session.user_id)
        .filter(Q(session_id=session.session_id) | Q(session_id=""))
        .annotate(size=Length("data"))
        .order_by("-session_id", "filename", "-version")
        .values("filename", "version", "size", "mime_type", "session_id", "created_at")[
            : ARTIFACT_LIMIT + 1
        ]
    )
    out = [
        ArtifactRow(
            filename=r["filename"],
            version=r["version"],
            size=r["size"],
            mime_type=r["mime_type"],
            user_scoped=not r["session_id"],
            created_at=r["created_at"],
        )
        for r in rows
    ]
    return out[:ARTIFACT_LIMIT], len(out) > ARTIFACT_LIMIT
