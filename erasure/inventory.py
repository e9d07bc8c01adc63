"""The personal-data inventory: where a subject's data lives, and where it does not.

Every model of the project (``django.apps.apps.get_models()``) and every Redis key
family is classified here, either as holding subject data, with how to find one
subject's rows, or as holding none, with the reason. Erasure (``erasure.jobs``)
deletes and verifies exactly the ``SUBJECT_STORES``, in their order; a test fails
when a model has no classification, so erasure cannot fall behind the schema.

A subject is an end user of the agents: a user id in one app, or in every app.
Staff accounts are not subjects.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

import re2
from django.apps import apps
from django.db import connection
from django.db.models import Model, Q

from records import touches


@dataclass(frozen=True)
class Subject:
    """Whose data: ``user_id`` in ``app_name``, or in every app when ``app_name`` is None."""

    app_name: str | None
    user_id: str

    def __post_init__(self) -> None:
        # The "delete all deletes everyone" bug starts with an empty filter: refuse it here,
        # where every query of every store is built.
        if not isinstance(self.user_id, str) or not self.user_id.strip():
            raise ValueError("An erasure subject needs a non-empty user id.")
        if self.app_name is not None and not self.app_name.strip():
            raise ValueError("app_name must be None (all apps) or a non-empty app name.")

    def owner_q(self, prefix: str = "") -> Q:
        q = Q(**{f"{prefix}user_id": self.user_id})
        if self.app_name is not None:
            q &= Q(**{f"{prefix}app_name": self.app_name})
        return q


@dataclass(frozen=True)
class SubjectStore:
    """A model holding subject data; ``rows(subject)`` finds exactly that subject's rows."""

    label: str
    what: str
    owner_prefix: str = ""  # the path to app_name/user_id, e.g. "session__"

    @property
    def model(self) -> type[Model]:
        return apps.get_model(self.label)

    def q(self, subject: Subject) -> Q:
        return subject.owner_q(self.owner_prefix)

    def rows(self, subject: Subject):
        return self.model.objects.filter(self.q(subject))

    @property
    def app_field(self) -> str:
        return f"{self.owner_prefix}app_name"

    def erase_rows(self, pks: list, subject_hash: str) -> dict[str, int]:
        """Remove these rows of the subject; returns {model label: rows affected}."""
        _, per_model = self.model.objects.filter(pk__in=pks).delete()
        return per_model


VECTORS = "records.RecordEmbedding"


@dataclass(frozen=True)
class MemoryRecordStore(SubjectStore):
    """Memory records, whose vectors the database deletes with them: a vector written
    after the vector store was done (an ingest embeds after the user's lock is released,
    the back-fill takes none) is deleted here first, and counted as a vector."""

    def erase_rows(self, pks: list, subject_hash: str) -> dict[str, int]:
        if connection.vendor == "postgresql":
            # Locked first (FOR UPDATE waits for a writer's FOR KEY SHARE, and makes a
            # later one wait), so no vector lands between its delete and the records'.
            # In id order, as the back-fill locks them, so the two never deadlock.
            locking = self.model.objects.filter(pk__in=pks).order_by("pk").select_for_update()
            list(locking.values_list("pk"))
        vectors = apps.get_model(VECTORS)
        deleted, _ = vectors.objects.filter(record_id__in=pks).delete()
        per_model = super().erase_rows(pks, subject_hash)
        if deleted:
            per_model[VECTORS] = deleted
        return per_model


@dataclass(frozen=True)
class WorkItemStore(SubjectStore):
    """Sweeper work items name one user (user_id) or a batch of users (the users list).

    A batch naming the subject is deleted like a per-user item; deleting a planned item
    also takes it off its run's total (see sweeper.signals), so the run still finishes.
    """

    def q(self, subject: Subject) -> Q:
        named = Q(kind="users") & _list_names(subject.user_id)
        if subject.app_name is not None:
            named &= Q(app_name=subject.app_name)
        return subject.owner_q() | named


def _list_names(user_id: str) -> Q:
    """A JSON list of user ids (``WorkItem.users``) that holds ``user_id``."""
    if connection.vendor == "postgresql":
        return Q(users__contains=[user_id])  # jsonb @>: the element itself, any script
    # SQLite keeps the list as json.dumps wrote it, non-ASCII escaped: match that text
    # (icontains may also take a batch naming a differently-cased id: erring wide only
    # drops a batch from this pass; the next pass plans it again).
    return Q(users__icontains=json.dumps(user_id))


@dataclass(frozen=True)
class PseudonymisedStore(SubjectStore):
    """Rows that must stay (an append-only log) but must stop naming the subject: the
    user id is replaced by ``erased:`` and the subject's keyed hash."""

    def erase_rows(self, pks: list, subject_hash: str) -> dict[str, int]:
        n = self.model.objects.filter(pk__in=pks).pseudonymise_subject(pseudonym(subject_hash))
        return {self.label: n}


def pseudonym(subject_hash: str) -> str:
    return f"erased:{subject_hash[:24]}"


@dataclass(frozen=True)
class NoSubjectData:
    label: str
    why: str


@dataclass(frozen=True)
class RedisFamily:
    """A family of Redis keys. ``subject_data`` families are erased by ``erasure.jobs``."""

    name: str
    pattern: str  # a regular expression over the whole key
    subject_data: bool
    why: str

    def matches(self, key: str) -> bool:
        # Keys hold user ids: RE2 (linear time), with "." matching newlines too.
        return _compiled(self.pattern).fullmatch(key) is not None


@cache
def _compiled(pattern: str):
    return re2.compile("(?s)" + pattern)


# Order matters: memory records first, because enforcement running during an erasure
# can still write eviction events and regret hashes for records it evicts (those
# stores come later); events before their sessions, so each is counted and batched.
SUBJECT_STORES: tuple[SubjectStore, ...] = (
    # First: the record triggers would delete this row with the last record, and the job
    # could not count it; deleted first, the records' triggers find nothing to update.
    SubjectStore(
        "records.UserMemoryStats",
        "per-user totals of the records (kept by database triggers)",
    ),
    # Before the records: the database deletes a record's vector with it, and the job
    # could not count it (records.embedding_schema).
    SubjectStore(
        VECTORS,
        "vectors of the memory records (MEMADMIN_EMBEDDER), computed from their content, "
        "author and the turns said before them",
        owner_prefix="record__",
    ),
    MemoryRecordStore(
        "records.MemoryRecord",
        "memory records and summaries (a summary merges only the same user's records "
        "and sessions, so summary_sources never name another subject)",
    ),
    SubjectStore("records.EvictionEvent", "eviction log entries (ids, scores, dedupe keys)"),
    SubjectStore("records.RegretTerm", "keyed hashes of evicted records' terms"),
    SubjectStore("records.SearchLog", "access history: searches (returned ids, keyed term hashes)"),
    SubjectStore(
        "records.EvictedRecord", "access history: evicted records' scores and keyed term hashes"
    ),
    SubjectStore("records.Correction", "'I told you before' reports"),
    SubjectStore("records.SessionEvent", "ADK session events", owner_prefix="session__"),
    SubjectStore("records.AgentSession", "ADK sessions and their session-scoped state"),
    SubjectStore("records.RetiredSession", "tombstones of sessions the sweeper retired"),
    SubjectStore("records.Artifact", "ADK artifacts, session- and user-scoped, every version"),
    SubjectStore("records.UserState", "ADK user: state"),
    SubjectStore("sweeper.PlanEntry", "dry-run report lines (ids, scores, reasons)"),
    WorkItemStore("sweeper.WorkItem", "sweeper work items naming the user or a batch with it"),
    PseudonymisedStore(
        "memadmin.AuditEntry",
        "staff audit entries about the subject: kept (append-only), the user id replaced "
        "by 'erased:' and the subject's keyed hash",
    ),
)

NO_SUBJECT_DATA: tuple[NoSubjectData, ...] = (
    NoSubjectData("records.Policy", "per-app eviction configuration"),
    NoSubjectData("records.PolicyVersion", "history of per-app configuration"),
    NoSubjectData("records.ImportanceRule", "staff-written rules, per app"),
    NoSubjectData("records.ConfigGeneration", "one number that changes with policies and rules"),
    NoSubjectData(
        "records.AppState",
        "ADK app: state, shared by every user of an app and keyed by app only; agents must "
        "not keep personal data in app: keys",
    ),
    NoSubjectData("records.DailyCounter", "per app and day counts; no user column"),
    NoSubjectData("backtest.BacktestRun", "per app and day totals of a backtest; no user column"),
    NoSubjectData(
        "backtest.TuneRun", "per app totals of a tuning's best candidates; no user column"
    ),
    NoSubjectData("sweeper.Run", "run bookkeeping: kind, app, clock, counts; no user"),
    NoSubjectData("sweeper.DailyMetric", "per app and day roll-ups; no user column"),
    NoSubjectData(
        "erasure.ErasureRequest",
        "the erasure's own record: the user id in clear only until verified, then cleared "
        "(the keyed hash stays)",
    ),
    NoSubjectData("erasure.ErasureAuditEntry", "holds the request id, never the user id"),
    NoSubjectData("erasure.ErasureBarrier", "holds the keyed hash of the user id only"),
    NoSubjectData("auth.User", "staff accounts, not agents' end users"),
    NoSubjectData("api.ApiKey", "per-app API keys: hashes, names, times; no end user"),
    NoSubjectData("axes.AccessAttempt", "staff login attempts (username, address)"),
    NoSubjectData("axes.AccessFailureLog", "staff login failures (username, address)"),
    NoSubjectData("axes.AccessLog", "staff logins and logouts (username, address)"),
    NoSubjectData("axes.AccessAttemptExpiration", "expiry times of staff login attempts"),
    NoSubjectData("auth.Group", "staff roles"),
    NoSubjectData("auth.Permission", "schema"),
    NoSubjectData("contenttypes.ContentType", "schema"),
    NoSubjectData(
        "sessions.Session",
        "staff logins: authentication and the time of the last password check; pages "
        "never put end-user ids in flash messages",
    ),
    NoSubjectData(
        "admin.LogEntry",
        "Django admin history; subject-data models are read-only in the admin (a test "
        "checks it), and the admin only logs changes, so no entry names a subject",
    ),
    NoSubjectData("django_celery_beat.PeriodicTask", "schedules; memadmin's tasks take no user"),
    NoSubjectData("django_celery_beat.PeriodicTasks", "schedule change marker"),
    NoSubjectData("django_celery_beat.IntervalSchedule", "schedules"),
    NoSubjectData("django_celery_beat.CrontabSchedule", "schedules"),
    NoSubjectData("django_celery_beat.SolarSchedule", "schedules"),
    NoSubjectData("django_celery_beat.ClockedSchedule", "schedules"),
)

REDIS_FAMILIES: tuple[RedisFamily, ...] = (
    RedisFamily(
        "touch buffer",
        rf"{re.escape(touches.PREFIX)}:({'|'.join(touches.KINDS)}):.+{touches.SEP}.+",
        True,
        "per (app, user): record ids, hit counts, access times and searches' history "
        "entries (returned ids, keyed term hashes)",
    ),
    RedisFamily(
        "touch buffer pending set",
        re.escape(touches.PENDING),
        True,
        "members name (app, user); the subject's member is removed",
    ),
    RedisFamily("touch flush lock", re.escape(touches.FLUSH_LOCK), False, "a lock, no data"),
    RedisFamily(
        "search counters buffer",
        rf"{re.escape(touches.COUNTERS)}(:proc)?",
        False,
        "per app and day: searches and regret hits to add; names no user",
    ),
    RedisFamily(
        "Celery broker",
        r"(celery|unacked|unacked_index|unacked_mutex|_kombu\..*|celery-task-meta-.*|celeryev.*)",
        False,
        "transient task messages; memadmin's erasure and sweep tasks carry row ids",
    ),
)

SUBJECT_REDIS_FAMILIES = tuple(f for f in REDIS_FAMILIES if f.subject_data)


def classification() -> dict[str, SubjectStore | NoSubjectData]:
    out: dict[str, SubjectStore | NoSubjectData] = {}
    for entry in (*SUBJECT_STORES, *NO_SUBJECT_DATA):
        if entry.label in out:
            raise ValueError(f"{entry.label} is classified twice in erasure.inventory")
        out[entry.label] = entry
    return out


def unclassified_models() -> list[str]:
    known = classification()
    return sorted(
        m._meta.label
        for m in apps.get_models(include_auto_created=False)
        if m._meta.label not in known
    )


def redis_family(key: str) -> RedisFamily | None:
    return next((f for f in REDIS_FAMILIES if f.matches(key)), None)
