"""Generated demo data: a few apps, tens of users, the article's pharmacy customer.

Deterministic for a given seed, so every page, sweep and screenshot has something
real to show. Used by ``manage.py seed_demo``.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Count, Max, Min
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from records import feedback, touches
from records import policy as pure
from records.memory_service import add_session, search_entries
from records.models import (
    AgentSession,
    AppState,
    Artifact,
    Correction,
    DailyCounter,
    EvictedRecord,
    EvictionEvent,
    ImportanceRule,
    MemoryRecord,
    Policy,
    PolicyVersion,
    RegretTerm,
    RetiredSession,
    SearchLog,
    SessionEvent,
    UserState,
)
from records.policies import policy_for, update_policy
from records.tokens import count_tokens

PHARMACY = "pharmacy-support"
TRAVEL = "travel-concierge"
BANK = "bank-helpdesk"
DEMO_APPS = (PHARMACY, TRAVEL, BANK)
# The long-standing customer from the article's worked example.
PHARMACY_CUSTOMER = "cust-0042"
# The agent that writes each app's sessions.
AGENTS = {PHARMACY: "pharmacy_agent", TRAVEL: "travel_agent", BANK: "bank_agent"}

FIRST = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivo", "Jia", "Kofi", "Lena"]
LAST = ["Silva", "Novak", "Okafor", "Berg", "Kaur", "Moreau", "Tanaka", "Walsh"]
STREETS = ["Elm Street", "Harbour Road", "Mill Lane", "Station Avenue", "Kings Way", "Rue Verte"]
CITIES = ["Leeds", "Porto", "Lyon", "Utrecht", "Kraków", "Dublin"]
DRUGS = ["metformin", "lisinopril", "atorvastatin", "levothyroxine", "salbutamol"]
ALLERGENS = ["penicillin", "sulfa drugs", "peanuts", "latex", "ibuprofen"]
DESTINATIONS = ["Lisbon", "Kyoto", "Reykjavík", "Marrakesh", "Vancouver", "Split", "Oaxaca"]
MEALS = ["vegetarian", "gluten-free", "halal", "vegan", "kosher"]
SEATS = ["an aisle seat", "a window seat", "extra legroom"]
ACCOUNTS = ["current account", "joint account", "savings account", "business account"]


@dataclass(frozen=True)
class Persona:
    """One demo user: every record and session of the user names the same person."""

    name: str
    nick: str
    city: str
    street: str
    num: int
    phone: str
    drug: str = "metformin"
    dose: int = 500
    allergen: str = "penicillin"
    meal: str = "vegetarian"
    seat: str = "an aisle seat"
    destination: str = "Lisbon"
    account: str = "current account"


def persona(rng: random.Random) -> Persona:
    first = rng.choice(FIRST)
    return Persona(
        name=f"{first} {rng.choice(LAST)}",
        nick=first,
        city=rng.choice(CITIES),
        street=rng.choice(STREETS),
        num=rng.randint(1, 200),
        phone=f"+44 7{rng.randint(100, 999)} {rng.randint(100000, 999999)}",
        drug=rng.choice(DRUGS),
        dose=rng.choice([5, 10, 20, 50, 100]),
        allergen=rng.choice(ALLERGENS),
        meal=rng.choice(MEALS),
        seat=rng.choice(SEATS),
        destination=rng.choice(DESTINATIONS),
        account=rng.choice(ACCOUNTS),
    )


# The article's customer: the worked example's delivery address is in Leeds.
ARTICLE_CUSTOMER = Persona(
    name="Ana Novak",
    nick="Ana",
    city="Leeds",
    street="Elm Street",
    num=12,
    phone="+44 7700 900142",
    drug="metformin",
    dose=500,
    allergen="penicillin",
)

# Per app: (category, importance, pinned, note templates, what the user says in a chat).
# Notes are what the memory holds about the customer; fields come from their Persona,
# except {order}, {date}, {n}, {destination2}, which vary per note.
IDENTITY = (
    "identity",
    0.9,
    False,
    ["The customer's name is {name}; they prefer to be called {nick}."],
    ["My name is {name}, but please call me {nick}."],
)
CONTACT = (
    "contact",
    0.8,
    False,
    ["Send letters to {num} {street}, {city}.", "Preferred contact is email; phone {phone}."],
    ["My phone number is {phone} if anything urgent comes up."],
)
PLEASANTRY = [
    "Asked about opening hours of the {city} branch.",
    "Said the new app layout is easier to use.",
]
CATEGORIES = {
    PHARMACY: [
        IDENTITY,
        (
            "contact",
            0.8,
            False,
            [
                "Deliver orders to {num} {street}, {city}.",
                "Preferred contact is email; phone {phone} for urgent issues.",
            ],
            ["Please deliver my prescriptions to {num} {street}, {city}."],
        ),
        (
            "health",
            0.9,
            True,
            ["The customer takes {drug} daily, {dose} mg."],
            ["I take {drug} every day, {dose} mg."],
        ),
        (
            "commitment",
            0.7,
            False,
            [
                "Order #{order} placed for {drug}, expected on {date}.",
                "Appointment booked for {date} at the {city} branch for a medication review.",
            ],
            ["Could you reorder my {drug}? I am running low."],
        ),
        (
            "complaint",
            0.5,
            False,
            [
                "Complained that the courier left the parcel in the rain.",
                "Unhappy about waiting {n} days for a refund on a cancelled order.",
            ],
            ["The courier left my parcel in the rain again."],
        ),
        (
            "other",
            0.2,
            False,
            [*PLEASANTRY, "Asked whether the loyalty card works for online orders."],
            ["Does the loyalty card work for online orders?"],
        ),
    ],
    TRAVEL: [
        IDENTITY,
        CONTACT,
        (
            "preference",
            0.9,
            True,
            ["The traveller needs {meal} meals on every flight.", "The traveller prefers {seat}."],
            ["I need {meal} meals on flights, and I prefer {seat}."],
        ),
        (
            "commitment",
            0.7,
            False,
            [
                "Booking #{order}: flight from {city} to {destination2}, departing {date}.",
                "Hotel in {destination2} held for arrival on {date}.",
            ],
            ["Can you book me a flight from {city} to {destination2} next month?"],
        ),
        (
            "complaint",
            0.5,
            False,
            [
                "Complained that the {destination2} hotel lost the reservation.",
                "Unhappy about waiting {n} days for a refund of a cancelled flight.",
            ],
            ["My flight to {destination2} was cancelled and the refund is late."],
        ),
        (
            "other",
            0.2,
            False,
            [*PLEASANTRY, "Mentioned wanting to visit {destination} one day."],
            ["I have always wanted to see {destination}."],
        ),
    ],
    BANK: [
        IDENTITY,
        CONTACT,
        (
            "security",
            0.9,
            True,
            ["The {account} is never discussed by phone without the customer's passphrase."],
            ["Never discuss my {account} by phone unless I give the passphrase."],
        ),
        (
            "commitment",
            0.7,
            False,
            [
                "Standing order #{order} set up on the {account}, first payment on {date}.",
                "Card replacement for the {account} due to arrive on {date}.",
            ],
            ["Please send me a new card for my {account}."],
        ),
        (
            "complaint",
            0.5,
            False,
            [
                "Complained about a duplicate card payment on the {account}.",
                "Unhappy about waiting {n} days for a transfer to clear.",
            ],
            ["A transfer from my {account} has been pending for days."],
        ),
        (
            "other",
            0.2,
            False,
            [*PLEASANTRY, "Asked whether the {city} branch has a cash machine inside."],
            ["Is there a cash machine inside the {city} branch?"],
        ),
    ],
}
CATEGORY_WEIGHTS = [1, 2, 1, 3, 2, 8]
AGENT_REPLIES = {
    PHARMACY: ["Noted, thank you. Anything else about your prescriptions?"],
    TRAVEL: ["Noted for your trips. Anything else about your travel plans?"],
    BANK: ["Noted on your file. Anything else about your accounts?"],
}
FILLER = [
    "The agent confirmed the details back to the customer.",
    "No follow-up was needed after the conversation.",
    "This came up while discussing a previous request.",
    "The customer repeated this twice to make sure it was noted.",
]


@dataclass
class DemoStats:
    apps: int = 0
    users: int = 0
    records: int = 0
    sessions: int = 0
    events: int = 0
    history_days: int = 0


def _fill(rng: random.Random, template: str, now: datetime, who: Persona) -> str:
    return template.format(
        **vars(who),
        destination2=rng.choice([d for d in DESTINATIONS if d != who.destination]),
        order=rng.randint(10000, 99999),
        date=(now + timedelta(days=rng.randint(1, 30))).date().isoformat(),
        n=rng.randint(3, 21),
    )


def _content(rng: random.Random, template: str, now: datetime, target_tokens: int, who) -> str:
    text = _fill(rng, template, now, who)
    while count_tokens(text) < target_tokens - 8:
        text += " " + rng.choice(FILLER)
    return text


def tombstone_id(user: str, created: datetime, now: datetime) -> str:
    """The retired session an old note came from: one per user and 30 days of age."""
    return f"{user}-r{int((now - created).days // 30):02d}"


def _record(
    rng,
    app,
    user,
    now,
    *,
    who: Persona,
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
    content = _content(rng, template, now, tokens, who)
    return MemoryRecord(
        app_name=app,
        user_id=user,
        # Provenance resolves: a tombstone for each month of notes (see add_tombstones).
        source_session_id=tombstone_id(user, created, now),
        source_event_ids=[uuid.UUID(int=rng.getrandbits(128)).hex[:16]],
        content=content,
        author="user",
        role="user",
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


# The oldest demo notes are this many days old.
MAX_AGE_DAYS = 330


def _random_record(
    rng, app, user, now, who, max_age_days=MAX_AGE_DAYS, before_days: float | None = None
) -> MemoryRecord:
    """A note of the app's kinds; ``before_days``: written longer ago than that (before a
    history of that many days)."""
    category, importance, pinned, templates, _ = rng.choices(
        CATEGORIES[app], weights=CATEGORY_WEIGHTS
    )[0]
    age = rng.uniform(before_days or 0.5, max_age_days)
    return _record(
        rng,
        app,
        user,
        now,
        who=who,
        category=category,
        importance=importance,
        pinned=pinned,
        template=rng.choice(templates),
        age_days=age,
        tokens=rng.randint(30, 110),
    )


def pharmacy_customer_records(now: datetime, rng: random.Random) -> list[MemoryRecord]:
    """498 records of about 70 tokens, as in the article, with the pinned allergy."""
    app, user, who = PHARMACY, PHARMACY_CUSTOMER, ARTICLE_CUSTOMER
    other = CATEGORIES[PHARMACY][-1][3]
    out = [
        _record(
            rng,
            app,
            user,
            now,
            who=who,
            category="health",
            importance=0.9,
            pinned=True,
            template="The customer is allergic to {allergen}; never suggest it.",
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
            who=who,
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
                who=who,
                category="other",
                importance=0.1,
                pinned=False,
                template=rng.choice(other),
                age_days=310,
                accessed_days_ago=rng.uniform(180, 260),
                hits=rng.choice([0, 1]),
            )
        )
    # Unpinned: the allergy is her one pin, and only the four notes above score 0.1.
    choices = [c[:4] for c in CATEGORIES[PHARMACY][:5]] + [("other", 0.4, False, other)]
    while len(out) < 498:
        category, importance, _, templates = rng.choices(choices, weights=[1, 2, 0, 4, 2, 6])[0]
        out.append(
            _record(
                rng,
                app,
                user,
                now,
                who=who,
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


def _chat(rng, app: str, sid: str, start: float, turns: int, now, who) -> list[Event]:
    """A conversation of the app: the user says things of its categories, its agent answers."""
    events, ts = [], start
    for i in range(turns):
        said = rng.choices(CATEGORIES[app], weights=CATEGORY_WEIGHTS)[0][4]
        for author, text in (
            ("user", _fill(rng, rng.choice(said), now, who)),
            (AGENTS[app], rng.choice(AGENT_REPLIES[app])),
        ):
            ts += rng.uniform(5, 60)
            events.append(
                Event(
                    id=str(uuid.UUID(int=rng.getrandbits(128))),
                    invocation_id=f"inv-{sid}-{i}",
                    author=author,
                    content=types.Content(
                        role="user" if author == "user" else "model",
                        parts=[types.Part(text=text)],
                    ),
                    timestamp=ts,
                )
            )
    return events


def _store_session(app, user, sid, events: list[Event], created: datetime) -> int:
    data = [e.model_dump(mode="json", exclude_none=True) for e in events]
    session = AgentSession.objects.create(
        app_name=app,
        user_id=user,
        session_id=sid,
        state={"channel": "chat"},
        created_at=created,
        last_update_time=data[-1]["timestamp"],
        revision=len(data),
        event_count=len(data),
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
            for i, e in enumerate(data)
        ]
    )
    return len(data)


def _add_sessions(rng, app, user, now, count, who) -> tuple[int, int]:
    n_events = 0
    for k in range(count):
        idle_days = rng.choice([0.01, 0.2, 1, 3, 12, 25, 60])
        start = (now - timedelta(days=idle_days)).timestamp() - 3600
        sid = f"{user}-s{k}"
        events = _chat(rng, app, sid, start, rng.randint(2, 10), now, who)
        n_events += _store_session(
            app, user, sid, events, datetime.fromtimestamp(start, tz=now.tzinfo)
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
    return count, n_events


def who(app: str, user: str) -> Persona:
    """The person behind a demo user, the same on every call (a seed from the ids)."""
    if (app, user) == (PHARMACY, PHARMACY_CUSTOMER):
        return ARTICLE_CUSTOMER
    return persona(random.Random(f"{app}/{user}"))


def add_tombstones(now: datetime) -> int:
    """A retired session for each source session the demo's records name that is not
    stored, as the nightly sweep leaves them: retired the idle period after its last note."""
    live = set(
        AgentSession.objects.filter(app_name__in=DEMO_APPS).values_list(
            "app_name", "user_id", "session_id"
        )
    )
    idle = {app: timedelta(days=policy_for(app).session_idle_days) for app in DEMO_APPS}
    spans = (
        MemoryRecord.objects.filter(app_name__in=DEMO_APPS)
        .values("app_name", "user_id", "source_session_id")
        .annotate(first=Min("created_at"), last=Max("created_at"), notes=Count("id"))
        .order_by("app_name", "user_id", "source_session_id")
    )
    tombstones = [
        RetiredSession(
            app_name=s["app_name"],
            user_id=s["user_id"],
            session_id=s["source_session_id"],
            created_at=s["first"],
            last_update_time=s["last"].timestamp(),
            event_count=2 * s["notes"],  # each note from a user turn and the agent's answer
            retired_at=min(now, s["last"] + idle[s["app_name"]]),
        )
        for s in spans
        if (s["app_name"], s["user_id"], s["source_session_id"]) not in live
    ]
    RetiredSession.objects.bulk_create(tombstones, ignore_conflicts=True)
    return len(tombstones)


def clear_demo() -> None:
    from sweeper.models import DailyMetric, Run

    # An applied plan protects its dry-run: delete the applying runs first.
    Run.objects.filter(plan__app_name__in=DEMO_APPS).delete()
    Run.objects.filter(app_name__in=DEMO_APPS).delete()
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
        Correction,
        DailyCounter,
        RegretTerm,
        DailyMetric,
        ImportanceRule,
        SearchLog,  # the access history: a reset that kept it would replay it twice
        EvictedRecord,
    ):
        model.objects.filter(app_name__in=DEMO_APPS).delete()


def _count_as_added(records: list[MemoryRecord]) -> None:
    """Count bulk-made records on their creation days, as ingest counts what it stores,
    so the overview's records added per week agrees with what the demo holds. Sets the
    counts rather than adding to them: seed() runs on apps clear_demo() emptied."""
    added: dict[tuple[str, date], int] = {}
    for r in records:
        key = (r.app_name, r.created_at.date())
        added[key] = added.get(key, 0) + 1
    DailyCounter.objects.bulk_create(
        [
            DailyCounter(day=day, app_name=app, name=feedback.RECORDS_ADDED, value=n)
            for (app, day), n in sorted(added.items())
        ],
        update_conflicts=True,
        unique_fields=["day", "app_name", "name"],
        update_fields=["value"],
    )


def demo_present() -> bool:
    return MemoryRecord.objects.filter(app_name__in=DEMO_APPS).exists()


@transaction.atomic
def seed(
    *,
    seed: int = 42,
    users_per_app: int = 14,
    now: datetime | None = None,
    history_days: int = 14,
) -> DemoStats:
    """Create the demo apps, users, records and sessions, and ``history_days`` days of
    history for the charts (see ``seed_history``). Call clear_demo() first to redo."""
    now = now or timezone.now()
    rng = random.Random(seed)
    stats = DemoStats()
    for app in DEMO_APPS:
        policy_for(app)
    # The apps have had their policies as long as they have had records.
    PolicyVersion.objects.filter(app_name__in=DEMO_APPS, version=1).update(
        created_at=now - timedelta(days=MAX_AGE_DAYS)
    )
    if not history_days:  # else the history tightens it on its day (a mark on the charts)
        tighten_travel_caps(now)
    # A staff rule of one app, so the Rules page shows an override next to the defaults.
    ImportanceRule.objects.create(
        app_name=TRAVEL,
        name="loyalty",
        pattern=r"\b(?:gold|platinum) (?:member|tier|card)\b",
        importance=0.7,
        category="identity",
    )
    stats.apps = len(DEMO_APPS)
    users: dict[str, dict[str, int]] = {app: {} for app in DEMO_APPS}  # user -> records

    records = pharmacy_customer_records(now, rng)
    stats.users += 1
    stats.sessions, stats.events = _add_sessions(
        rng, PHARMACY, PHARMACY_CUSTOMER, now, 3, ARTICLE_CUSTOMER
    )
    for app in DEMO_APPS:
        for i in range(users_per_app):
            user = f"{app.split('-')[0][:4]}-user-{i:03d}"
            person = who(app, user)
            size = rng.choice([5, 20, 60, 120, 180, 240, 420, 520])
            records.extend(_random_record(rng, app, user, now, person) for _ in range(size))
            users[app][user] = size
            s, e = _add_sessions(rng, app, user, now, rng.randint(1, 4), person)
            stats.users += 1
            stats.sessions += s
            stats.events += e
    MemoryRecord.objects.bulk_create(records, batch_size=2000)
    _count_as_added(records)
    stats.records = len(records)
    AppState.objects.get_or_create(app_name=PHARMACY, defaults={"state": {"support_phone": "0800"}})
    UserState.objects.get_or_create(
        app_name=PHARMACY, user_id=PHARMACY_CUSTOMER, defaults={"state": {"language": "en"}}
    )
    if history_days:
        history = seed_history(now, users, seed=seed, days=history_days)
        stats.users += history.users
        stats.records += history.records
        stats.history_days = history_days
    add_tombstones(now)
    return stats


# --- history: two weeks of traffic, enforcement, feedback and roll-ups -------------------

# Users who talk every day and sit at their cap, so each day's new memories evict old ones.
REGULARS_PER_APP = 3
# Other users with a conversation on a given day (they stay under their caps).
OTHERS_PER_DAY = 2
# A note the regulars have, which evicted, an agent later searches for again.
REGRET_NOTE = "Asked about opening hours of the {city} branch."
REGRET_QUERY = "what are the opening hours of the branch"
# What agents look up for a user who is talking: mostly their pinned notes, which
# eviction keeps, so most searches find something and are no regret; now and then
# what the user is called (notes a tight cap can evict: see TIGHTEN_DAY).
SEARCHES = {
    PHARMACY: ["{drug} daily dose"],
    TRAVEL: ["{meal} meals on flights", "prefers {seat}"],
    BANK: ["{account} passphrase"],
}
NAME_SEARCH = ("called {nick}", 1 / 10)  # the query, and the share of searches asking it
SEARCHES_PER_TALK = (3, 6)  # searches in one user's conversation, at least and at most
# The day (days before now) on which a user of each app had to repeat something.
CORRECTION_DAYS = {PHARMACY: 10, TRAVEL: 6, BANK: 3}
# The day (days before now) the travel app's caps are tightened, before its traffic:
# the charts mark the change, and the app's regulars are cut down to the new caps.
TIGHTEN_DAY = 8
TIGHTER_CAPS = {"max_records": 200, "max_tokens": 15_000, "session_idle_days": 14}
# Each past day is rolled up at this time, after its traffic, as the nightly task would.
ROLLUP_TIME = time(23, 0)


@dataclass
class HistoryStats:
    users: int = 0
    records: int = 0
    sessions: int = 0
    searches: int = 0


def tighten_travel_caps(at: datetime) -> None:
    """Tighten the travel app's caps, as staff would on the Policies page, at ``at``: so
    cap use differs between apps, and the charts mark when the change came."""
    policy = update_policy(TRAVEL, TIGHTER_CAPS, note="demo: tighter caps")
    PolicyVersion.objects.filter(app_name=TRAVEL, version=policy.version).update(created_at=at)


def _history_session(rng, app: str, user: str, sid: str, when: datetime) -> Session:
    """A short real ADK conversation of the app, by the user's own persona."""
    events = _chat(rng, app, sid, when.timestamp(), rng.randint(2, 4), when, who(app, user))
    return Session(
        id=sid, app_name=app, user_id=user, events=events, last_update_time=events[-1].timestamp
    )


def _searches(rng, app: str, user: str, when: datetime) -> int:
    """The agent's searches during a user's conversation, through the memory service."""
    person = vars(who(app, user))
    n = rng.randint(*SEARCHES_PER_TALK)
    for i in range(n):
        asked, share = NAME_SEARCH
        if rng.random() >= share:
            asked = rng.choice(SEARCHES[app])
        query = asked.format(**person)
        search_entries(app, user, query, when + timedelta(seconds=20 * (i + 1)))
    return n


def seed_history(
    now: datetime, users: dict[str, dict[str, int]], *, seed: int = 42, days: int = 14
) -> HistoryStats:
    """``days`` days of real traffic before ``now``, each rolled up that evening.

    Each past day, through the same services agents use, at that day's time: a few
    regular users (at their cap) and others have a conversation ingested, which
    enforces the policy then (so old notes are evicted that day), and the agent
    searches their memory a few times (``search_entries``); every other day it searches
    for a note evicted earlier (a regret hit), and some users report having to repeat
    themselves (corrections). On TIGHTEN_DAY, before its traffic, the travel app's caps
    are tightened. Each day is rolled up that evening (``rollup_day``), so its size
    snapshot is of that day. Then, today: one real sweep of the bank app, one dry-run
    sweep of the pharmacy app to review on the Sweeps page, and today's roll-up.
    Deterministic for a given seed.

    ``users`` maps each app's demo users to their number of records; only users well
    under the cap join the regulars, so the users left over a cap stay over it.
    """
    from sweeper import runs
    from sweeper.metrics import rollup_day
    from sweeper.models import RunKind
    from sweeper.tasks import run_inline

    rng = random.Random(seed * 7919 + 1)  # apart from the base data's stream
    out = HistoryStats()
    regulars: dict[str, list[str]] = {}
    base = []
    for app in DEMO_APPS:
        policy = policy_for(app)
        count = min(REGULARS_PER_APP, len(users.get(app, [])))
        regulars[app] = [f"{app.split('-')[0][:4]}-regular-{i}" for i in range(count)]
        for user in regulars[app]:
            person = who(app, user)
            notes = [
                _record(
                    rng,
                    app,
                    user,
                    now,
                    who=person,
                    category="other",
                    importance=0.2,
                    pinned=False,
                    template=REGRET_NOTE,
                    age_days=rng.uniform(60, 200),
                    hits=0,
                )
                for _ in range(6)
            ]
            rest = policy.max_records - 2 - len(notes)
            mine = notes + [
                _random_record(rng, app, user, now, person, max_age_days=300, before_days=days + 1)
                for _ in range(rest)
            ]
            # As the services would have left them before the history: written before
            # it, and last used when written (the fresh start). The backtest's replay
            # moves a record only by the searches logged since, so a note dated inside
            # the history but there from its start, or last used at a time no logged
            # search explains that a search in the history then overwrote, is one it
            # cannot know as it stood at each eviction.
            for r in mine:
                r.last_accessed_at = pure.fresh_last_accessed(r.created_at, policy.params())
            base.extend(mine)
            out.users += 1
    MemoryRecord.objects.bulk_create(base, batch_size=2000)
    out.records = len(base)
    # Sessions idle longer than the idle period in force today are retired by now.
    idle_days = {app: policy_for(app).session_idle_days for app in DEMO_APPS}
    idle_days[TRAVEL] = TIGHTER_CAPS["session_idle_days"]

    for k in range(days, 0, -1):
        day = (now - timedelta(days=k)).date()
        start = datetime.combine(day, time(9, 0), tzinfo=UTC)
        if k == min(TIGHTEN_DAY, days):
            tighten_travel_caps(start - timedelta(hours=1))
        for app in DEMO_APPS:
            cap = policy_for(app).max_records
            others = [u for u, size in users.get(app, {}).items() if size < cap * 0.8]
            talking = regulars[app] + rng.sample(others, min(OTHERS_PER_DAY, len(others)))
            for n, user in enumerate(talking):
                when = start + timedelta(minutes=40 * n + rng.randint(0, 30))
                session = _history_session(rng, app, user, f"{user}-d{k}", when)
                add_session(session, when)
                if k < idle_days[app]:  # older ones: tombstones (add_tombstones)
                    _store_session(app, user, session.id, session.events, when)
                out.sessions += 1
                out.searches += _searches(rng, app, user, when)
            if regulars[app] and k % 2 == 0:  # an agent looks for a note evicted earlier
                search_entries(app, regulars[app][0], REGRET_QUERY, start + timedelta(hours=6))
                out.searches += 1
            if regulars[app] and k == CORRECTION_DAYS[app]:  # a user had to repeat something
                feedback.report_correction(
                    app,
                    regulars[app][-1],
                    start + timedelta(hours=7),
                    about=REGRET_QUERY,
                )
        # With Redis, the day's searches (touches, history, counters) wait in the buffer
        # for the periodic flush; the roll-up must see them, as production's would by then.
        touches.flush_touches()
        rollup_day(day, datetime.combine(day, ROLLUP_TIME, tzinfo=UTC))

    today = []
    if users.get(BANK):
        today.append(runs.create_run(RunKind.SWEEP, app_name=BANK, enqueue=False))
    if users.get(PHARMACY):
        today.append(runs.create_run(RunKind.SWEEP, app_name=PHARMACY, dry_run=True, enqueue=False))
    for run in today:
        run_inline(run)
    touches.flush_touches()
    rollup_day(now.date(), now)
    return out
