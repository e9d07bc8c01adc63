"""Scenario: the session service against ADK's own, interleaved repetition by repetition.

Ours is ``DjangoSessionService`` (the agent's path: the executor hop, the user's lock,
the stale-session check). The baselines are ADK's ``DatabaseSessionService`` on the
same PostgreSQL server (its own database, ``<bench database>_adk``, psycopg's async
driver) and ``InMemorySessionService``. Three measurements:

1. ``append_event``: a fresh session per service and repetition, ``events`` events
   appended one by one (text content and a state delta, as a Runner's turns);
2. ``get_session`` of that session (``events`` events), ``gets`` times;
3. ``list_sessions`` of an app holding ``sessions`` sessions over ``users`` users,
   loaded identically into each service: the whole app (ADK's interface), one user's,
   and our API's first page (``list_sessions_page``; ADK has no paging, so its caller
   reads the whole list to show a page).

In every repetition each service runs once, the order rotating, so load drift between
repetitions moves all of them alike; the ratio is the median of per-repetition ratios.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from django.db import connection
from google.adk.events.event import Event, EventActions
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types
from psycopg import sql

from records import sessions
from records.models import AgentSession, UserState
from records.session_service import DjangoSessionService, run_db

from ..harness import Row, alternate_async
from ..load import reset_data

NAME = "sessions"
APP = "bench-sessions"
LIST_APP = "bench-sessions-list"
PAGE = 100
START = 1_790_000_000.0


def _event(i: int) -> Event:
    return Event(
        invocation_id=f"inv-{i // 2}",
        author="user" if i % 2 == 0 else "support_agent",
        timestamp=time.time(),
        content=types.Content(
            role="user" if i % 2 == 0 else "model",
            parts=[types.Part(text=f"turn {i}: my order 4471 has not arrived yet, can you check?")],
        ),
        actions=EventActions(state_delta={"turns": i, "last_topic": "delivery"}),
    )


# --- ADK's database --------------------------------------------------------------------


def _adk_urls(database_url: str) -> tuple[str, str, str]:
    """(its database name, the admin URL, SQLAlchemy's URL) for ADK's own database."""
    parts = urlsplit(database_url)
    name = unquote(parts.path.lstrip("/")) + "_adk"
    admin = urlunsplit(parts._replace(path="/postgres"))
    alchemy = urlunsplit(parts._replace(scheme="postgresql+psycopg", path=f"/{name}"))
    return name, admin, alchemy


def _recreate(admin: str, name: str, *, create: bool = True) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if create:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


# --- the listing's data, identical in every service --------------------------------------


def _listing_rows(total: int, users: int) -> list[tuple[str, str, float, dict]]:
    return [
        (f"u{i % users:05d}", f"s{i:06d}", START + i, {"channel": "web", "n": i})
        for i in range(total)
    ]


def _load_ours(rows, users: int) -> None:
    from datetime import UTC, datetime

    AgentSession.objects.bulk_create(
        [
            AgentSession(
                app_name=LIST_APP,
                user_id=u,
                session_id=s,
                state=state,
                created_at=datetime.fromtimestamp(t, UTC),
                last_update_time=t,
                event_count=0,
            )
            for u, s, t, state in rows
        ],
        batch_size=2_000,
    )
    UserState.objects.bulk_create(
        [
            UserState(app_name=LIST_APP, user_id=f"u{i:05d}", state={"tier": "gold"})
            for i in range(0, users, 10)
        ]
    )
    with connection.cursor() as cursor:  # as ADK's tables are analysed after their load
        for model in (AgentSession, UserState):
            cursor.execute(f"ANALYZE {model._meta.db_table}")


async def _load_adk(service: DatabaseSessionService, rows, users: int) -> None:
    from sqlalchemy import text

    await service.prepare_tables()
    async with service.db_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
                "SELECT :app, u, s, st::jsonb, to_timestamp(t) AT TIME ZONE 'UTC', "
                "to_timestamp(t) AT TIME ZONE 'UTC' "
                "FROM unnest(CAST(:users AS text[]), CAST(:ids AS text[]), "
                "CAST(:times AS float8[]), CAST(:states AS text[])) AS r(u, s, t, st)"
            ),
            {
                "app": LIST_APP,
                "users": [r[0] for r in rows],
                "ids": [r[1] for r in rows],
                "times": [r[2] for r in rows],
                "states": [_json(r[3]) for r in rows],
            },
        )
        await conn.execute(
            text(
                "INSERT INTO user_states (app_name, user_id, state, update_time) "
                "SELECT :app, u, '{\"tier\": \"gold\"}'::jsonb, now() AT TIME ZONE 'UTC' "
                "FROM unnest(CAST(:users AS text[])) AS u"
            ),
            {"app": LIST_APP, "users": [f"u{i:05d}" for i in range(0, users, 10)]},
        )
        await conn.execute(text("ANALYZE sessions"))


def _json(value: dict) -> str:
    import json

    return json.dumps(value)


async def _load_in_memory(service: InMemorySessionService, rows, users: int) -> None:
    for u, s, t, state in rows:
        session = await service.create_session(
            app_name=LIST_APP, user_id=u, session_id=s, state=state
        )
        stored = service.sessions[LIST_APP][u][s]
        stored.last_update_time = session.last_update_time = t
    for i in range(0, users, 10):
        service.user_state.setdefault(LIST_APP, {})[f"u{i:05d}"] = {"tier": "gold"}


# --- the scenario ------------------------------------------------------------------------


def run(report, size: dict, env: dict) -> None:
    reset_data()
    name, admin, alchemy = _adk_urls(env["DATABASE_URL"])
    _recreate(admin, name)
    try:
        asyncio.run(_run(report, size, alchemy))
    finally:
        _recreate(admin, name, create=False)


async def _run(report, size: dict, alchemy: str) -> None:
    services = {
        "ours": DjangoSessionService(),
        "ADK DatabaseSessionService": DatabaseSessionService(alchemy),
        "ADK InMemorySessionService": InMemorySessionService(),
    }
    baselines = [n for n in services if n != "ours"]
    reps, events, gets = size["repetitions"], size["events"], size["gets"]
    held: dict[str, list[Session]] = {n: [] for n in services}
    complete: dict[str, bool] = {}

    def appender(label: str):
        async def one(rep: int) -> list[float]:
            service = services[label]
            session = await service.create_session(app_name=APP, user_id=f"user-{rep}")
            times = []
            for i in range(events):
                event = _event(i)
                start = time.perf_counter()
                await service.append_event(session, event)
                times.append((time.perf_counter() - start) * 1000)
            held[label].append(session)
            return times

        return one

    def getter(label: str):
        async def one(rep: int) -> list[float]:
            service, session = services[label], held[label][rep]
            times = []
            for _ in range(gets):
                start = time.perf_counter()
                got = await service.get_session(
                    app_name=APP, user_id=session.user_id, session_id=session.id
                )
                times.append((time.perf_counter() - start) * 1000)
            whole = got is not None and [e.id for e in got.events] == [e.id for e in session.events]
            complete[label] = complete.get(label, True) and whole
            return times

        return one

    appended = await alternate_async({n: appender(n) for n in services}, reps)
    fetched = await alternate_async({n: getter(n) for n in services}, reps)
    for label in services:
        report.check(
            NAME,
            f"get_session, {label}: all {events} events in order, every repetition",
            complete[label],
        )

    rows = _listing_rows(size["sessions"], size["users"])
    await run_db(_load_ours, rows, size["users"])
    await _load_adk(services["ADK DatabaseSessionService"], rows, size["users"])
    await _load_in_memory(services["ADK InMemorySessionService"], rows, size["users"])
    one_user = rows[0][0]
    listed: dict[tuple[str, str], set] = {}

    def lister(label: str, user_id: str | None):
        async def one(rep: int) -> list[float]:
            times = []
            for _ in range(size["lists"]):
                start = time.perf_counter()
                response = await services[label].list_sessions(app_name=LIST_APP, user_id=user_id)
                times.append((time.perf_counter() - start) * 1000)
            listed[(label, str(user_id))] = {
                (s.user_id, s.id, s.state.get("n"), s.state.get("user:tier"))
                for s in response.sessions
            }
            return times

        return one

    async def first_page(rep: int) -> list[float]:
        times = []
        for _ in range(size["lists"]):
            start = time.perf_counter()
            page = await run_db(sessions.list_sessions_page, app_name=LIST_APP, limit=PAGE)
            times.append((time.perf_counter() - start) * 1000)
        listed[("page", "None")] = {s.id for s in page.sessions}
        return times

    listings = {}
    for user_id in (None, one_user):
        listings[user_id] = await alternate_async({n: lister(n, user_id) for n in services}, reps)
    paged = await alternate_async(
        {"page": first_page, "whole": lister("ADK DatabaseSessionService", None)}, reps
    )
    await services["ADK DatabaseSessionService"].close()

    for user_id in (None, one_user):
        answers = {listed[(n, str(user_id))].__len__() for n in services}
        same = len({frozenset(listed[(n, str(user_id))]) for n in services}) == 1
        report.check(
            NAME,
            f"list_sessions ({'the app' if user_id is None else 'one user'}): every service "
            f"lists the same sessions with the same merged state ({sorted(answers)})",
            same,
        )
    expected_page = {s for _, s, _, _ in rows[:PAGE]}
    report.check(
        NAME,
        f"list_sessions_page: the first {PAGE} by update time",
        listed[("page", "None")] == expected_page,
    )

    def add(scenario: str, label: str, ours, base, baseline: str, target: str = "", bar=None):
        row = Row.interleaved(scenario, label, ours, base, baseline=baseline, target=target)
        if bar is not None and baseline == "ADK DatabaseSessionService":
            row.met = row.ratio is not None and row.ratio >= bar
        report.rows.append(row)

    whole = f"{size['sessions']:,} sessions, {size['users']:,} users"
    for base in baselines:
        add(
            "sessions: append_event",
            f"{events} events/session",
            appended["ours"],
            appended[base],
            base,
            "≥ 1.1× DatabaseSessionService" if base.startswith("ADK Data") else "",
            1.1,
        )
        add(
            "sessions: get_session",
            f"{events} events",
            fetched["ours"],
            fetched[base],
            base,
            "≥ 1.2× DatabaseSessionService" if base.startswith("ADK Data") else "",
            1.2,
        )
        add(
            "sessions: list_sessions (app)",
            whole,
            listings[None]["ours"],
            listings[None][base],
            base,
            "≥ 10× DatabaseSessionService" if base.startswith("ADK Data") else "",
            10,
        )
        add(
            "sessions: list_sessions (one user)",
            f"{size['sessions'] // size['users']} of {whole}",
            listings[one_user]["ours"],
            listings[one_user][base],
            base,
        )
    report.rows.append(
        Row.interleaved(
            f"sessions: first page of {PAGE} (list_sessions_page, the API's cursor)",
            whole,
            paged["page"],
            paged["whole"],
            baseline="ADK DatabaseSessionService (whole list: no paging)",
        )
    )
