"""ADK sessions, their events, app and user state, artifacts and retired sessions."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .limits import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX


class AgentSessionManager(models.Manager):
    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for session in objs:
            session.fill_listed_at()
        return super().bulk_create(objs, *args, **kwargs)


class AgentSession(models.Model):
    """An ADK session. Session-scoped state only; app and user state live apart."""

    app_name = models.CharField(max_length=APP_NAME_MAX)
    user_id = models.CharField(max_length=USER_ID_MAX)
    session_id = models.CharField(max_length=SESSION_ID_MAX)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    # ADK's float seconds, kept exactly so sessions round-trip.
    last_update_time = models.FloatField()
    # Where listings place the session: the latest ``last_update_time`` it has had. An
    # event may be stamped earlier than the session's last update (an agent's clock
    # behind the server's), which moves ``last_update_time`` back; this never moves
    # back, so a listing in progress cannot lose a session behind its cursor. This
    # version always sets it; on PostgreSQL a trigger also keeps it at least
    # last_update_time on every write, for processes of the version before (a rolling
    # upgrade: migrations 0019-0021), which know no such column.
    listed_at = models.FloatField(null=True)
    # Bumped on every write; a caller holding an older revision is stale.
    revision = models.PositiveBigIntegerField(default=0)
    event_count = models.PositiveIntegerField(default=0)

    objects = AgentSessionManager()

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
            # The sweeper's idle sessions of an app, by their last update.
            models.Index(
                fields=["app_name", "last_update_time", "user_id", "session_id"],
                name="session_app_listing",
            ),
            # In the listing's order (records.sessions.LISTING_ORDER), so a listing or a
            # page of it is read in index order with no sort, for the app or one user.
            models.Index(
                fields=["app_name", "listed_at", "user_id", "session_id"],
                name="session_app_listed",
            ),
            models.Index(
                fields=["app_name", "user_id", "listed_at", "session_id"],
                name="session_user_listed",
            ),
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} ({self.app_name}/{self.user_id})"

    def save(self, *args, **kwargs):
        self.fill_listed_at()
        super().save(*args, **kwargs)

    def fill_listed_at(self) -> None:
        """A session written without a listing place is placed at its last update."""
        if self.listed_at is None:
            self.listed_at = self.last_update_time


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
