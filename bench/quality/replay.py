"""One replay: a dataset's users through memadmin's real services under one policy.

Sessions are stored once through ``DjangoSessionService`` (``store_sessions``, in the
bench's parent process) under a source app and read back with ``get_session``; each
replay ingests those ADK sessions under its own app (one app per policy and budget,
so replays never share records). For every user, in time order:

1. questions due before this session are asked (``search_memory``; top 10);
2. a ``preload_memory``-style search with the session's first turn (it touches what it
   returns, as the ADK tool's search does);
3. ``add_session_to_memory`` at the session's end; the product enforces its policy
   inside; for a baseline the bench then evicts with the baseline's order
   (``policies.enforce_baseline``);
4. questions asked at the end follow the last session, a day later.

The services' clock is the replay's (``EvictingMemoryService(clock=...)``). Touches
are applied as they happen (memadmin's no-Redis path), the same as a flush of the
Redis buffer between two sessions. Each turn is one ADK event whose id is the turn's
key; its record is found by the dedupe key ingest derives from (app, user, session,
event) - among stored records, or among eviction events when enforcement evicted it
at once - and a turn with neither was dropped by the rules (small talk).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async

from . import data, locomo, policies, synthetic

SOURCE_APP = "quality-sessions-{}"  # the dataset's name
TOP = 10
SEED = 7


@dataclass(frozen=True)
class Job:
    dataset: str
    mode: str
    policy: str
    budget: int | None
    run: int = 1  # 2: the same replay again, for the determinism check
    # Policy "tuned": the ``start`` policy with these values (JSON, policy fields).
    values: str = ""
    start: str = "default"
    # Only the sessions before this many days from the first (the tuner's half year).
    until_day: int | None = None
    # Questions asked from this many days on are counted apart too (the other half).
    late_day: int | None = None

    @property
    def app(self) -> str:
        budget = "all" if self.budget is None else self.budget
        rerun = f"-run{self.run}" if self.run > 1 else ""
        half = f"-until{self.until_day}" if self.until_day is not None else ""
        tuned = f"-{hashlib.sha256(self.values.encode()).hexdigest()[:8]}" if self.values else ""
        start = f"-from-{self.start}" if self.policy == "tuned" else ""
        return (
            f"quality-{self.dataset}-{self.mode}-{self.policy}{start}-{budget}{rerun}{half}{tuned}"
        )


@dataclass
class Outcome:
    """The measurements of one replay, summed over its users."""

    job: dict
    questions: int = 0
    answerable: int = 0
    evidence: int = 0  # evidence turns of the questions asked (with repeats)
    evidence_retained: int = 0  # ... whose record was stored when asked
    evidence_dropped: int = 0  # ... that the rules dropped at ingest
    pinned_questions: int = 0
    pinned_answerable: int = 0
    high_questions: int = 0
    high_answerable: int = 0
    updated_questions: int = 0
    stale: int = 0
    evictions: int = 0
    pinned_evicted: int = 0
    pins_per_user: list[int] = field(default_factory=list)
    records_per_user: list[int] = field(default_factory=list)
    answers: list = field(default_factory=list)  # [question id, [turn keys of the top 10]]
    late_questions: int = 0  # asked from ``Job.late_day`` on
    late_answerable: int = 0
    seconds: float = 0.0


def load_dataset(spec: dict) -> data.Dataset:
    if spec["name"] == "locomo":
        return locomo.load(spec["path"], seed=spec["seed"], conversations=spec["conversations"])
    from . import synthetic

    return synthetic.generate(users=spec["users"], sessions=spec["sessions"], seed=spec["seed"])


def turn_time(session: data.Session, index: int) -> datetime:
    return session.at + timedelta(minutes=index)


def session_end(session: data.Session) -> datetime:
    return turn_time(session, len(session.turns) + 1)


def adk_events(session: data.Session) -> list:
    from google.adk.events.event import Event
    from google.genai import types

    return [
        Event(
            id=turn.key,
            invocation_id=f"{session.id}-i{i}",
            author=turn.author,
            timestamp=turn_time(session, i).timestamp(),
            content=types.Content(
                role="model" if turn.author == "agent" else "user",
                parts=[types.Part(text=turn.text)],
            ),
        )
        for i, turn in enumerate(session.turns)
    ]


async def store_sessions(dataset: data.Dataset, users: list[str] | None = None) -> int:
    """Sessions of ``users`` (default: all) through the session service, event by event.

    Returns how many events were stored.
    """
    from records.session_service import DjangoSessionService

    service = DjangoSessionService()
    stored = 0
    for user in dataset.users:
        if users is not None and user.user_id not in users:
            continue
        for session in user.sessions:
            adk = await service.create_session(
                app_name=SOURCE_APP.format(dataset.name),
                user_id=user.user_id,
                session_id=session.id,
            )
            for event in adk_events(session):
                await service.append_event(adk, event)
                stored += 1
    return stored


async def fetch_sessions(dataset: data.Dataset) -> dict[str, list]:
    """The stored ADK sessions of every user, in order."""
    from records.session_service import DjangoSessionService

    service = DjangoSessionService()
    out = {}
    for user in dataset.users:
        sessions = []
        for session in user.sessions:
            adk = await service.get_session(
                app_name=SOURCE_APP.format(dataset.name),
                user_id=user.user_id,
                session_id=session.id,
            )
            if adk is None or len(adk.events) != len(session.turns):
                raise RuntimeError(f"session {session.id} was not stored whole")
            sessions.append(adk)
        out[user.user_id] = sessions
    return out


def _no_commit_wait(sender, connection, **kwargs) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO off")


def skip_commit_waits() -> None:
    """Commits in this process stop waiting for the disk (PostgreSQL's synchronous_commit).

    Replays measure answers, not time, and make thousands of small commits; a crash
    would lose the bench's own throw-away data and nothing else. Every connection this
    process opens from now on gets it (the session service closes and reopens them).
    """
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(_no_commit_wait, dispatch_uid="quality-no-commit-wait")
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None:
            _no_commit_wait(None, conn)


class ReplayClock:
    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        return self.now


# --- ORM helpers, run in the services' thread ---------------------------------------


def _locate(app: str, user_id: str, keys: dict[str, str]) -> dict[str, int]:
    """Record id of each dedupe key, stored or evicted already."""
    from records.models import EvictionEvent, MemoryRecord

    found = dict(
        MemoryRecord.objects.filter(
            app_name=app, user_id=user_id, dedupe_key__in=list(keys)
        ).values_list("dedupe_key", "id")
    )
    for key, record_id in EvictionEvent.objects.filter(
        app_name=app, user_id=user_id, dedupe_key__in=[k for k in keys if k not in found]
    ).values_list("dedupe_key", "record_id"):
        found[key] = record_id
    return found


def _stored(app: str, user_id: str) -> set[int]:
    from records.models import MemoryRecord

    return set(
        MemoryRecord.objects.filter(app_name=app, user_id=user_id).values_list("id", flat=True)
    )


def _pinned_keys(app: str, user_id: str, session) -> set[str]:
    """Dedupe keys of the session's records the rules pin (what ingest itself decides)."""
    from records import store

    candidates = store.extractor_for(app).from_events(app, user_id, session.id, session.events)
    return {c.dedupe_key for c in candidates if c.pinned and c.dedupe_key}


def _finish(app: str, outcome: Outcome, users: list[str], pinned: set[str]) -> None:
    from django.db.models import Count, Q

    from records.models import EvictionEvent, MemoryRecord

    outcome.evictions = EvictionEvent.objects.filter(app_name=app).count()
    outcome.pinned_evicted = EvictionEvent.objects.filter(
        app_name=app, dedupe_key__in=list(pinned)
    ).count()
    counts = {
        row["user_id"]: row
        for row in MemoryRecord.objects.filter(app_name=app)
        .values("user_id")
        .annotate(n=Count("id"), pins=Count("id", filter=Q(pinned=True)))
    }
    for user_id in users:
        row = counts.get(user_id, {"n": 0, "pins": 0})
        outcome.records_per_user.append(row["n"])
        outcome.pins_per_user.append(row["pins"])


# --- the replay --------------------------------------------------------------------


async def replay(job: Job, dataset: data.Dataset, sessions: dict[str, list]) -> Outcome:
    from records.memory_service import EvictingMemoryService

    await sync_to_async(policies.configure)(job.app, job.policy, job.budget, job.values, job.start)
    clock = ReplayClock()
    memory = EvictingMemoryService(clock=clock)
    outcome = Outcome(job=asdict(job))
    all_pinned: set[str] = set()
    for user in dataset.users:
        all_pinned |= await _replay_user(job, user, sessions[user.user_id], memory, clock, outcome)
    await sync_to_async(_finish)(job.app, outcome, [u.user_id for u in dataset.users], all_pinned)
    return outcome


async def _replay_user(job, user, sessions, memory, clock, outcome) -> set[str]:
    """Replay one user's sessions and questions; returns the dedupe keys the rules pinned."""
    from records.extract import dedupe_key

    db = sync_to_async
    app, user_id = job.app, user.user_id
    record_of: dict[str, int | None] = {}  # turn key -> record id (None: dropped)
    turn_of: dict[int, str] = {}  # record id -> turn key
    pinned: set[str] = set()
    due: dict[int, list[data.Question]] = defaultdict(list)
    for q in user.questions:
        due[q.ask[job.mode]].append(q)

    async def ask(questions: list[data.Question]) -> None:
        if not questions:
            return
        stored = await db(_stored)(app, user_id)
        late = job.late_day is not None and clock.now >= first + timedelta(days=job.late_day)
        for q in questions:
            response = await memory.search_memory(app_name=app, user_id=user_id, query=q.text)
            top = [int(m.id) for m in response.memories[:TOP]]
            answerable = _score(outcome, q, top, stored, record_of)
            outcome.late_questions += late
            outcome.late_answerable += late and answerable
            outcome.answers.append([q.id, [turn_of.get(r, "?") for r in top]])

    first = synthetic.START  # until_day and late_day count days of the synthetic year
    for index, (session, adk) in enumerate(zip(user.sessions, sessions, strict=True)):
        if job.until_day is not None and session.at >= first + timedelta(days=job.until_day):
            return pinned  # the half year ends here: no later session, no later question
        clock.now = session.at
        await ask(due.pop(index, []))
        if session.turns:
            await memory.search_memory(app_name=app, user_id=user_id, query=session.turns[0].text)
        clock.now = session_end(session)
        adk = adk.model_copy(update={"app_name": app})
        keys = {dedupe_key(app, user_id, adk.id, t.key): t.key for t in session.turns}
        pinned |= await db(_pinned_keys)(app, user_id, adk)
        await memory.add_session_to_memory(adk)
        found = await db(_locate)(app, user_id, keys)
        for key, turn_key in keys.items():
            record_of[turn_key] = found.get(key)
            if key in found:
                turn_of[found[key]] = turn_key
        if job.policy in policies.BASELINES:
            await db(policies.enforce_baseline)(
                app, user_id, job.policy, job.budget, clock.now, SEED
            )
    if user.sessions:
        clock.now = session_end(user.sessions[-1]) + timedelta(days=1)
    await ask(due.pop(data.END, []))
    if due:
        raise RuntimeError(f"questions due at sessions that do not exist: {sorted(due)}")
    return pinned


def _score(outcome: Outcome, q: data.Question, top: list[int], stored: set[int], record_of):
    need = [record_of.get(e) for e in q.evidence]
    answerable = all(r is not None and r in top for r in need)
    outcome.questions += 1
    outcome.answerable += answerable
    outcome.evidence += len(need)
    outcome.evidence_retained += sum(1 for r in need if r is not None and r in stored)
    outcome.evidence_dropped += sum(1 for r in need if r is None)
    if q.pinned:
        outcome.pinned_questions += 1
        outcome.pinned_answerable += answerable
    if q.high:
        outcome.high_questions += 1
        outcome.high_answerable += answerable
    if q.stale:
        outcome.updated_questions += 1
        rank = {r: i for i, r in enumerate(top)}
        current = rank.get(record_of.get(q.evidence[0]), len(top))
        old = [rank.get(record_of.get(k), len(top)) for k in q.stale]
        outcome.stale += any(r < current for r in old)
    return answerable


# --- the worker processes ----------------------------------------------------------------


def store_worker(args: dict) -> dict:
    """Store ``args["users"]`` ([dataset, user id] pairs); ``python -m bench.subproc``."""
    skip_commit_waits()
    stored = 0
    for spec in args["datasets"]:
        dataset = load_dataset(spec)
        users = [u for name, u in args["users"] if name == dataset.name]
        if users:
            stored += asyncio.run(store_sessions(dataset, users))
    return {"events": stored}


def worker(args: dict) -> dict:
    """Run ``args["jobs"]`` one after the other; ``python -m bench.subproc quality``."""
    import sys
    import time

    from django.test import override_settings

    from records import touches

    skip_commit_waits()
    datasets = {spec["name"]: load_dataset(spec) for spec in args["datasets"]}
    results = []
    with override_settings(REDIS_URL=""):
        touches.redis_client.cache_clear()

        async def main() -> None:
            sessions = {}
            for job in (Job(**j) for j in args["jobs"]):
                dataset = datasets[job.dataset]
                if job.dataset not in sessions:
                    sessions[job.dataset] = await fetch_sessions(dataset)
                start = time.perf_counter()
                outcome = await replay(job, dataset, sessions[job.dataset])
                outcome.seconds = time.perf_counter() - start
                results.append(asdict(outcome))
                print(
                    f"bench: quality: {job.app} done in {outcome.seconds:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

        asyncio.run(main())
    touches.redis_client.cache_clear()
    return {"outcomes": results}


def tune_worker(args: dict) -> dict:
    """Replay ``args["job"]`` (its half year, ``until_day``), then tune its app on that
    history with ``backtest.tune`` as ``manage.py tune`` would at the half year's end;
    ``python -m bench.subproc quality_tune``. Returns the best candidate's values."""
    import json

    from django.conf import settings
    from django.test import override_settings

    from backtest import tune
    from records import touches

    skip_commit_waits()
    job = Job(**args["job"])
    dataset = load_dataset(args["dataset"])
    days = job.until_day
    now = synthetic.START + timedelta(days=days)
    # The whole half year is the window: keep its history (the default keeps 90 days).
    kept = {**settings.MEMADMIN, "ACCESS_HISTORY_DAYS": days + 1}
    with override_settings(REDIS_URL="", MEMADMIN=kept):
        touches.redis_client.cache_clear()

        async def main() -> None:
            await replay(job, dataset, await fetch_sessions(dataset))

        asyncio.run(main())
        tuning = tune.tune(job.app, days, now)
    touches.redis_client.cache_clear()
    # As a person would: the best candidate only if it beats the policy that ran on the
    # tuner's own figures (the list may hold only worse ones).
    best = tuning.best[0] if tuning.best and tuning.beats_current(tuning.best[0]) else None
    values = {} if best is None else {f: new for f, (_, new) in best.changes.items()}
    return {
        "values": json.dumps(values, sort_keys=True, default=float),
        "label": "the current policy (no better candidate)" if not values else best.label,
        "tried": tuning.tried,
        "current_regret": tuning.current.regret,
        "best_regret": None if best is None else best.totals.regret,
        "exact": tuning.exact,
        # The first-ranked candidate on the held-out part: the searches only the policy
        # that ran regrets, and only it (what ``beats_current`` tested).
        "held_out_from": None if tuning.held_out_from is None else tuning.held_out_from.isoformat(),
        "held_out": None
        if not tuning.best
        else [tuning.best[0].held_out.regret_fewer, tuning.best[0].held_out.regret_more],
        "first": None if not tuning.best else tuning.best[0].label,
    }
