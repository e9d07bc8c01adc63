"""Sessions: idle and active per app, one session's events and artifacts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, Q, Value, When
from django.db.models.functions import Length

from .. import policy as pure
from ..events import describe_event
from ..models import AgentSession, Artifact, Policy, SessionEvent
from ..policies import policy_or_default
from ..policy_sql import idle_cutoff_by_app, idle_q
from ..timestamps import readable

SESSION_STATES = ("idle", "active")
ARTIFACT_LIMIT = 200


def apps_idle_cutoff(now: datetime):
    """SQL expression: the ``last_update_time`` below which a session of its app is idle
    (each app's ``Policy.session_idle_days``)."""
    return idle_cutoff_by_app(
        now, dict(Policy.objects.values_list("app_name", "session_idle_days"))
    )


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
            idle=Count("id", filter=idle_q(apps_idle_cutoff(now), now)),
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
            When(idle_q(apps_idle_cutoff(now), now), then=Value(True)),
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
    idle_days = policy_or_default(session.app_name).session_idle_days
    return pure.session_idle(session.last_update_time, now, idle_days)


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
