"""Realistic, varied, deterministic text for the benchmarks: what support agents remember.

Names, addresses, orders, allergies, medications, complaints, preferences, bookings and
some chatter, drawn from templates with a seeded ``random.Random``, so every run stores
the same text. Queries are drawn from the same vocabulary, so they match some records
(not all, not none), as a real agent's ``search_memory`` calls would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from google.adk.events.event import Event
from google.genai import types

FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farah",
    "Gustavo",
    "Hana",
    "Ivan",
    "Jana",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tomasz",
    "Uma",
    "Victor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Aisha",
    "Bruno",
    "Carmen",
    "Deepak",
    "Emeka",
    "Fatima",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Luca",
    "Maya",
    "Nikolai",
]
LAST = [
    "Silva",
    "Okafor",
    "Novak",
    "Kowalski",
    "Haddad",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Rossi",
    "Fischer",
    "Mensah",
    "Costa",
    "Petrov",
    "Nguyen",
    "Schmidt",
    "Dubois",
    "Iyer",
    "Garcia",
    "Olsen",
    "Brennan",
    "Yilmaz",
    "Kim",
    "Alvarez",
]
STREETS = [
    "Mill Lane",
    "Harbour Road",
    "Station Street",
    "Elm Grove",
    "Queen's Avenue",
    "Canal Walk",
    "Orchard Close",
    "Market Square",
    "Bridge Street",
    "Hillside Drive",
    "Church Row",
    "Linden Way",
]
CITIES = [
    "Leeds",
    "Bristol",
    "Porto",
    "Lyon",
    "Gdansk",
    "Utrecht",
    "Ghent",
    "Bologna",
    "Aarhus",
    "Cork",
    "Valencia",
    "Graz",
]
PRODUCTS = [
    "blood pressure monitor",
    "vitamin D drops",
    "thermometer",
    "compression socks",
    "hand cream",
    "nasal spray",
    "glucose test strips",
    "inhaler spacer",
    "sunscreen SPF 50",
    "travel adapter",
    "noise-cancelling headphones",
    "walking boots",
    "rain jacket",
    "baby formula",
    "face masks",
    "electric toothbrush",
    "reading glasses",
    "knee brace",
    "yoga mat",
    "coffee grinder",
]
MEDICATIONS = [
    "metformin",
    "lisinopril",
    "amoxicillin",
    "salbutamol",
    "levothyroxine",
    "atorvastatin",
    "omeprazole",
    "sertraline",
    "insulin glargine",
    "ibuprofen",
    "cetirizine",
    "warfarin",
]
ALLERGENS = [
    "penicillin",
    "peanuts",
    "shellfish",
    "latex",
    "sesame",
    "aspirin",
    "bee stings",
    "sulfa drugs",
    "tree nuts",
    "gluten",
    "lactose",
    "dust mites",
]
CONDITIONS = [
    "type 2 diabetes",
    "asthma",
    "high blood pressure",
    "migraine",
    "eczema",
    "coeliac disease",
]
ISSUES = [
    "arrived damaged",
    "never arrived",
    "was delayed by a week",
    "was the wrong size",
    "was charged twice",
    "came without the leaflet",
    "was left in the rain",
    "had a broken seal",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TIMES = ["morning", "afternoon", "evening", "lunchtime", "before 9am", "after 6pm"]
TOPICS = [
    "the weather in {city}",
    "a football match",
    "their garden",
    "a trip to {city}",
    "a new recipe",
    "their dog",
    "a concert in {city}",
    "the train strike",
    "a birthday party",
]

# (template, weight): weights make the mix realistic (few allergies, many chats).
TEMPLATES: tuple[tuple[str, int], ...] = (
    ("My name is {first} {last}.", 3),
    ("Please deliver to {num} {street}, {city} {postcode}.", 4),
    ("My address changed to {num} {street}, {city}, postcode {postcode}.", 2),
    ("You can reach me on +44 7{phone} or {email}.", 2),
    ("I placed order #{order} for a {product} on {day}.", 6),
    ("Order #{order} with the {product} {issue}.", 5),
    ("I want a refund for the {product}; order #{order} {issue}.", 3),
    ("I'm unhappy that my delivery {issue} again.", 2),
    ("I am allergic to {allergen}, it gives me hives.", 1),
    ("Note my allergy to {allergen} on the file.", 1),
    ("My prescription for {medication} 500 mg needs a refill on {day}.", 1),
    ("I take {medication} every {time}.", 1),
    ("I was diagnosed with {condition} last year.", 1),
    ("I prefer deliveries in the {time}, never on {day}.", 3),
    ("My favourite brand for the {product} is the cheaper one.", 2),
    ("I always pay by card and never want paper receipts.", 1),
    ("Book me an appointment on {day} {time} at the {city} branch.", 3),
    ("Remind me to reorder the {product} in {weeks} weeks.", 2),
    ("The {product} works well, thanks for the advice about it.", 3),
    ("We talked about {topic} while waiting for the courier.", 4),
    ("My daughter {first} also uses this account for the {product}.", 2),
    ("Is the {product} in stock at the {city} shop this {day}?", 4),
    ("The courier left the parcel with my neighbour at number {num}.", 2),
    ("I asked about opening hours of the {city} branch on {day}.", 3),
    ("I'm travelling to {city} next month and need the {product} before then.", 2),
)
MODEL_REPLIES: tuple[str, ...] = (
    "I've noted that on your account.",
    "Your order #{order} is on its way and should arrive on {day}.",
    "I've updated the delivery address to {num} {street}, {city}.",
    "The {product} is back in stock at the {city} branch.",
    "I'm sorry your order {issue}; a refund has been requested.",
    "I've added {allergen} to your allergy list.",
    "Your appointment is booked for {day} {time}.",
    "I'll remind you about the {product} in {weeks} weeks.",
)
SMALL_TALK = ("Hi!", "Thanks!", "ok", "Great, thank you", "Goodbye", "hello there", "👍")

QUERIES: tuple[str, ...] = (
    "What is my delivery address?",
    "Do I have any allergies?",
    "allergic to {allergen}",
    "What did I order last time?",
    "status of order #{order}",
    "my complaint about the {product}",
    "refund for a damaged parcel",
    "Which medication do I take?",
    "{medication} prescription refill",
    "when do I prefer deliveries",
    "my appointment at the {city} branch",
    "What is my name?",
    "{first} {last}",
    "phone number and email",
    "courier neighbour parcel",
    "{product} in stock",
    "trip to {city}",
)


@dataclass(frozen=True)
class TextSource:
    """Deterministic text for one purpose (seeded), so runs and baselines see the same."""

    seed: int

    def rng(self) -> random.Random:
        return random.Random(self.seed)


def _fill(template: str, rng: random.Random) -> str:
    city = rng.choice(CITIES)
    values = {
        "first": rng.choice(FIRST),
        "last": rng.choice(LAST),
        "num": rng.randint(1, 240),
        "street": rng.choice(STREETS),
        "city": city,
        "postcode": f"{rng.choice('ABCDEFGHJKLMNPRSTW')}{rng.randint(1, 29)} "
        f"{rng.randint(1, 9)}{''.join(rng.choices('ABDEFGHJLNPQRSTUWXYZ', k=2))}",
        "phone": f"{rng.randint(100, 999)} {rng.randint(100000, 999999)}",
        "email": f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}@example.com",
        "order": rng.randint(10000, 99999),
        "product": rng.choice(PRODUCTS),
        "issue": rng.choice(ISSUES),
        "allergen": rng.choice(ALLERGENS),
        "medication": rng.choice(MEDICATIONS),
        "condition": rng.choice(CONDITIONS),
        "day": rng.choice(DAYS),
        "time": rng.choice(TIMES),
        "weeks": rng.randint(2, 8),
        "topic": rng.choice(TOPICS).format(city=city),
    }
    return template.format(**values)


_WEIGHTED = [t for t, w in TEMPLATES for _ in range(w)]


def user_text(rng: random.Random) -> str:
    """One remembered fact or remark, sometimes two sentences long."""
    text = _fill(rng.choice(_WEIGHTED), rng)
    if rng.random() < 0.3:
        text += " " + _fill(rng.choice(_WEIGHTED), rng)
    return text


def model_text(rng: random.Random) -> str:
    return _fill(rng.choice(MODEL_REPLIES), rng)


def texts(n: int, seed: int) -> list[str]:
    """``n`` record texts (distinct enough to make a realistic full-text index)."""
    rng = random.Random(seed)
    return [user_text(rng) for _ in range(n)]


def queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [_fill(rng.choice(QUERIES), rng) for _ in range(n)]


def conversation(rng: random.Random, events: int = 20) -> list[tuple[str, str]]:
    """(author, text) turns of one support session: user and agent alternate, some chatter."""
    turns = []
    for i in range(events):
        if i % 2 == 0:
            text = rng.choice(SMALL_TALK) if rng.random() < 0.15 else user_text(rng)
            turns.append(("user", text))
        else:
            turns.append(("agent", model_text(rng)))
    return turns


def events_for(session_id: str, seed: int, start: float) -> list[Event]:
    rng = random.Random(seed)
    out = []
    for i, (author, text) in enumerate(conversation(rng)):
        role = "user" if author == "user" else "model"
        out.append(
            Event(
                id=f"{session_id}-e{i}",
                invocation_id=f"{session_id}-inv{i // 2}",
                author=author,
                timestamp=start + i,
                content=types.Content(role=role, parts=[types.Part(text=text)]),
            )
        )
    return out
