"""Generated demo data: a few apps, tens of users, the article's pharmacy customer.

Deterministic for a given seed, so every page, sweep and screenshot has something
real to show. Used by ``manage.py seed_demo``.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from google.adk.events.event import Event
from google.genai import types

from .models import (
    AgentSession,
    AppState,
    Artifact,
    EvictionEvent,
    MemoryRecord,
    Policy,
    PolicyVersion,
    RetiredSession,
    SessionEvent,
    UserState,
)
from .policies import policy_for, update_policy
from .tokens import count_tokens

PHARMACY = "pharmacy-support"
TRAVEL = "travel-concierge"
BANK = "bank-helpdesk"
DEMO_APPS = (PHARMACY, TRAVEL, BANK)
# The long-standing customer from the article's worked example.
PHARMACY_CUSTOMER = "cust-0042"

FIRST = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivo", "Jia", "Kofi", "Lena"]
STREETS = ["Elm Street", "Harbour Road", "Mill Lane", "Station Avenue", "Kings Way", "Rue Verte"]
CITIES = ["Leeds", "Porto", "Lyon", "Utrecht", "Kraków", "Dublin"]
DRUGS = ["metformin", "lisinopril", "atorvastatin", "levothyroxine", "salbutamol"]
ALLERGENS = ["penicillin", "sulfa drugs", "peanuts", "latex", "ibuprofen"]

# (category, importance, pinned, templates)
CATEGORIES = [
    ("identity", 0.9, False, ["The customer's name is {name}; they prefer to be called {nick}."]),
    (
        "contact",
        0.8,
        False,
        [
            "Deliver orders to {num} {street}, {city}.",
            "Preferred contact is email; phone {phone} for urgent issues.",
        ],
    ),
    ("health", 0.9, True, ["The customer takes {drug} daily, {dose} mg."]),
    (
        "commitment",
        0.7,
        False,
        [
            "Order #{order} placed for {drug}, expected on {date}.",
            "Appointment booked for {date} at the {city} branch.",
        ],
    ),
    (
        "complaint",
        0.5,
        False,
        [
            "Complained that the courier left the parcel in the rain.",
            "Unhappy about waiting {n} days for a refund.",
        ],
    ),
    (
        "other",
        0.2,
        False,
        [
            "Asked about opening hours of the {city} branch.",
            "Mentioned they are travelling to {city} next month.",
            "Asked whether the loyalty card works online.",
            "Said the new app layout is easier to use.",
        ],
    ),
]
FILLER = [
    "The agent confirmed the details back to the customer.",
    "No follow-up was needed after the conversation.",
    "This came up while discussing a previous order.",
    "The customer repeated this twice to make sure it was noted.",
]


@dataclass
class DemoStats:
    apps: int = 0
    users: int = 0
    records: int = 0
    sessions: int = 0
    events: int = 0


def _fill(rng: random.Random, template: str, now: datetime) -> str:
    return template.format(
        name=rng.choice(FIRST) + " " + rng.choice(["Silva", "Novak", "Okafor", "Berg", "Kaur"]),
        nick=rng.choice(FIRST),
        num=rng.randint(1, 200),
        street=rng.choice(STREETS),
        city=rng.choice(CITIES),
        phone=f"+44 7{rng.randint(100, 999)} {rng.randint(100000, 999999)}",
        drug=rng.choice(DRUGS),
        dose=rng.choice([5, 10, 20, 50, 100]),
        order=rng.randint(10000, 99999),
        date=(now + timedelta(days=rng.randint(1, 30))).date().isoformat(),
        n=rng.randint(3, 21),
    )


def _content(rng: random.Random, template: str, now: datetime, target_tokens: int) -> str:
    text = _fill(rng, template, now)
    while count_tokens(text) < target_tokens - 8:
        text += " " + rng.choice(FILLER)
    return text


def _record(
    rng,
    app,
    user,
    now,
    *,
    category,
    importance,
    pinned,
    template,
    age_days,
    tokens=70,
    accessed_days_ago=None,
    hits=None,
    rule=None,
) -> MemoryRecord:
    created = now - timedelta(days=age_days, minutes=rng.randint(0, 1440))
    half_life = timedelta(days=30)
    if accessed_days_ago is None:
        accessed_days_ago = rng.uniform(0, age_days)
    last = max(created - half_life, now - timedelta(days=accessed_days_ago))
    content = _content(rng, template, now, tokens)
    return MemoryRecord(
        app_name=app,
        user_id=user,
        source_session_id=f"s-{uuid.UUID(int=rng.getrandbits(128)).hex[:12]}",
        source_event_ids=[uuid.UUID(int=rng.getrandbits(128)).hex[:16]],
        content=content,
        author="user",
        entry_timestamp=created,
        created_at=created,
        last_accessed_at=last,
        hits=rng.choice([0, 0, 1, 2, 3, 5, 8, 13, 40]) if hits is None else hits,
        importance=importance,
        importance_source="rule",
        importance_rule=rule or f"default:{category}",
        category=category,
        pinned=pinned,
        tokens=count_tokens(content),
    )


def _random_record(rng, app, user, now, max_age_days=330) -> MemoryRecord:
    category, importance, pinned, templates = rng.choices(CATEGORIES, weights=[1, 2, 1, 3, 2, 8])[0]
    return _record(
        rng,
        app,
        user,
        now,
        category=category,
        importance=importance,
        pinned=pinned,
        template=rng.choice(templates),
        age_days=rng.uniform(0.5, max_age_days),
        tokens=rng.randint(30, 110),
    )


def pharmacy_customer_records(now: datetime, rng: random.Random) -> list[MemoryRecord]:
    """498 records of about 70 tokens, as in the article, with the pinned allergy."""
    app, user = PHARMACY, PHARMACY_CUSTOMER
    out = [
        _record(
            rng,
            app,
            user,
            now,
            category="health",
            importance=0.9,
            pinned=True,
            template="The customer is allergic to penicillin; never suggest it.",
            age_days=300,
            accessed_days_ago=200,
            hits=2,
            rule="default:allergy",
        ),
        _record(
            rng,
            app,
            user,
            now,
            category="other",
            importance=0.1,
            pinned=False,
            template="Asked about opening hours of the {city} branch.",
            age_days=320,
            accessed_days_ago=240,
            hits=1,
        ),
    ]
    for _ in range(3):  # more long-unread notes at the bottom of the list
        out.append(
            _record(
                rng,
                app,
                user,
                now,
                category="other",
                importance=0.1,
                pinned=False,
                template=rng.choice(CATEGORIES[-1][3]),
                age_days=310,
                accessed_days_ago=rng.uniform(180, 260),
                hits=rng.choice([0, 1]),
            )
        )
    while len(out) < 498:
        category, importance, pinned, templates = rng.choices(
            CATEGORIES[:5] + [("other", 0.4, False, CATEGORIES[-1][3])], weights=[1, 2, 0, 4, 2, 6]
        )[0]
        out.append(
            _record(
                rng,
                app,
                user,
                now,
                category=category,
                importance=importance,
                pinned=False,
                template=rng.choice(templates),
                age_days=rng.uniform(5, 330),
                accessed_days_ago=rng.uniform(0, 20),
                hits=rng.randint(1, 30),
            )
        )
    return out


def _session_events(rng, session_id, start: float, n: int, now) -> list[dict]:
    events, ts = [], start
    lines = [_fill(rng, rng.choice(c[3]), now) for c in CATEGORIES]
    for i in range(n):
        author = "user" if i % 2 == 0 else "pharmacy_agent"
        role = "user" if author == "user" else "model"
        text = rng.choice(lines) if author == "user" else "Noted, thank you. Anything else?"
        ts += rng.uniform(5, 90)
        event = Event(
            id=str(uuid.UUID(int=rng.getrandbits(128))),
            invocation_id=f"inv-{session_id}-{i // 2}",
            author=author,
            content=types.Content(role=role, parts=[types.Part(text=text)]),
            timestamp=ts,
        )
        events.append(event.model_dump(mode="json", exclude_none=True))
    return events


def _add_sessions(rng, app, user, now, count) -> tuple[int, int]:
    n_events = 0
    for k in range(count):
        idle_days = rng.choice([0.01, 0.2, 1, 3, 12, 25, 60])
        start = (now - timedelta(days=idle_days)).timestamp() - 3600
        sid = f"{user}-s{k}"
        evs = _session_events(rng, sid, start, rng.randint(4, 20), now)
        session = AgentSession.objects.create(
            app_name=app,
            user_id=user,
            session_id=sid,
            state={"channel": "chat"},
            created_at=datetime.fromtimestamp(start, tz=now.tzinfo),
            last_update_time=evs[-1]["timestamp"],
            revision=len(evs),
            event_count=len(evs),
        )
        SessionEvent.objects.bulk_create(
            [
                SessionEvent(
                    session=session,
                    position=i,
                    event_id=e["id"],
                    invocation_id=e["invocation_id"],
                    author=e["author"],
                    timestamp=e["timestamp"],
                    data=e,
                )
                for i, e in enumerate(evs)
            ]
        )
        if k == 0:
            Artifact.objects.create(
                app_name=app,
                user_id=user,
                session_id=sid,
                filename="receipt.txt",
                version=0,
                part={"inline_data": {"mime_type": "text/plain"}},
                data=b"demo receipt",
                mime_type="text/plain",
                created_at=now,
            )
        n_events += len(evs)
    return count, n_events


def clear_demo() -> None:
    for model in (
        MemoryRecord,
        AgentSession,
        AppState,
        UserState,
        Artifact,
        EvictionEvent,
        RetiredSession,
        Policy,
        PolicyVersion,
    ):
        model.objects.filter(app_name__in=DEMO_APPS).delete()


def demo_present() -> bool:
    return MemoryRecord.objects.filter(app_name__in=DEMO_APPS).exists()


@transaction.atomic
def seed(*, seed: int = 42, users_per_app: int = 14, now: datetime | None = None) -> DemoStats:
    """Create the demo apps, users, records and sessions. Call clear_demo() first to redo."""
    now = now or timezone.now()
    rng = random.Random(seed)
    stats = DemoStats()
    for app in DEMO_APPS:
        policy_for(app)
    # A tighter policy on one app so cap use differs between apps.
    update_policy(
        TRAVEL,
        {"max_records": 200, "max_tokens": 15_000, "session_idle_days": 14},
        note="demo: tighter caps",
    )
    stats.apps = len(DEMO_APPS)

    records = pharmacy_customer_records(now, rng)
    stats.users += 1
    stats.sessions, stats.events = _add_sessions(rng, PHARMACY, PHARMACY_CUSTOMER, now, 3)
    for app in DEMO_APPS:
        for i in range(users_per_app):
            user = f"{app.split('-')[0][:4]}-user-{i:03d}"
            size = rng.choice([5, 20, 60, 120, 180, 240, 420, 520])
            records.extend(_random_record(rng, app, user, now) for _ in range(size))
            s, e = _add_sessions(rng, app, user, now, rng.randint(1, 4))
            stats.users += 1
            stats.sessions += s
            stats.events += e
    MemoryRecord.objects.bulk_create(records, batch_size=2000)
    stats.records = len(records)
    AppState.objects.get_or_create(app_name=PHARMACY, defaults={"state": {"support_phone": "0800"}})
    UserState.objects.get_or_create(
        app_name=PHARMACY, user_id=PHARMACY_CUSTOMER, defaults={"state": {"language": "en"}}
    )
    return stats
