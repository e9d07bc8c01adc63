"""A synthetic support-agent year: what a shop's support agent hears from its customers.

Each user (seeded, independent of every policy) talks to the agent about 110 times in
360 days, in sessions of a greeting, one to three topics and a goodbye. The mix of
topics per session, by weight:

    orders (placed, arrival dates)          24    chit-chat and trivia (trips, pets) 20
    product and stock questions             14    complaints (damaged, late, ...)    12
    commitments (call-backs, due dates)      8    preferences                         6
    medication refills                       5    account and invoices                4
    ... plus the facts a customer states once: name and customer number, date of birth,
    phone and email, 0-2 allergies, 0-2 medications with their dose, 0-1 condition,
    a delivery address that changes 0-2 times in the year (mostly twice), and small talk that the
    rules drop ("Hi!", "Thanks, bye!").

The agent's replies are templated and often generic ("Let me check that for you."),
as real transcripts are. Ground truth, per fact: whether it should be pinned
(allergies and medications), whether it is of high importance (identity, contact,
health, the current address), and for the address which value is current.

Questions, each asked before a later session (mode "year"):
- cold high-importance: every identity, contact and health fact, 60+ days after it was
  said (allergies and medications twice);
- updated facts: the delivery address after it changed (the older addresses are the
  stale answers);
- recent: about a third of orders, complaints and commitments, within two weeks;
- long tail: a quarter of the trivia, preferences and complaints, 2 to 10 months later.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .. import corpus
from .data import END, Dataset, Question, Session, Turn, User

MODES = ("year",)
START = datetime(2025, 1, 6, tzinfo=UTC)
YEAR_DAYS = 360  # inside the article's 365-day TTL: nothing expires before the last question
SESSIONS_PER_USER = 110

TOPIC_WEIGHTS = {
    "order": 24,
    "trivia": 20,
    "stock": 14,
    "complaint": 12,
    "commitment": 8,
    "preference": 6,
    "refill": 5,
    "account": 4,
}
EVENTS = ["a wedding", "a conference", "a school trip", "a marathon", "a family reunion"]
PETS = [("dog", "Biscuit"), ("cat", "Miso"), ("rabbit", "Pepper"), ("dog", "Rolo")]
HOBBIES = ["the cello", "pottery", "Spanish", "rock climbing", "bread baking", "chess"]
FILLER = [
    "Let me check that for you.",
    "One moment please, I'm looking into it.",
    "I understand, let me see what I can do.",
    "Thanks for your patience while I look this up.",
]
GREETINGS = ["Hi!", "Hello there", "Good morning", "Hey"]
GOODBYES = [("Thanks, bye!", "You're welcome, have a nice day!"), ("ok, thanks", "Take care!")]


@dataclass
class _Fact:
    key: str
    day: int
    session: int
    kind: str


@dataclass
class _UserBuilder:
    user_id: str
    rng: random.Random
    sessions: list[Session] = field(default_factory=list)
    days: list[int] = field(default_factory=list)
    pending: list[tuple] = field(default_factory=list)  # (text, fact, day asked, truth)
    turns: list[Turn] = field(default_factory=list)

    def say(self, author: str, text: str) -> str:
        key = f"S{len(self.sessions) + 1}:{len(self.turns) + 1}"
        self.turns.append(Turn(key=key, author=author, text=text))
        return key

    def close(self, day: int) -> None:
        at = START + timedelta(days=day, hours=self.rng.randint(8, 19))
        self.sessions.append(
            Session(id=f"{self.user_id}-s{len(self.sessions) + 1}", at=at, turns=tuple(self.turns))
        )
        self.days.append(day)
        self.turns = []

    def question(self, text: str, fact: _Fact, day: int, **truth) -> None:
        self.pending.append((text, fact, day, truth))

    def ask_index(self, day: int, after: int) -> int:
        """The first session on or after ``day`` that comes after session ``after``."""
        for i, d in enumerate(self.days):
            if i > after and d >= day:
                return i
        return END

    def user(self) -> User:
        """The user, once every session is said: questions find their sessions now."""
        questions = tuple(
            Question(
                id=f"{self.user_id}-q{n}",
                text=text,
                evidence=(fact.key,),
                ask={"year": self.ask_index(day, fact.session)},
                category=fact.kind,
                **truth,
            )
            for n, (text, fact, day, truth) in enumerate(self.pending)
        )
        return User(self.user_id, tuple(self.sessions), questions)


def generate(*, users: int, seed: int, sessions: int = SESSIONS_PER_USER) -> Dataset:
    """``users`` customers of ``sessions`` sessions each (fewer only for quick runs)."""
    dataset = Dataset(name="synthetic", modes=MODES)
    for n in range(users):
        dataset.users.append(_user(n, seed, sessions))
    return dataset


def _fill(rng: random.Random) -> dict:
    return {
        "order": rng.randint(10_000, 99_999),
        "product": rng.choice(corpus.PRODUCTS),
        "city": rng.choice(corpus.CITIES),
        "day": rng.choice(corpus.DAYS),
        "time": rng.choice(corpus.TIMES),
        "issue": rng.choice(corpus.ISSUES),
    }


def _address(rng: random.Random) -> str:
    postcode = f"{rng.choice('ABCDEFGHJKLMNPRSTW')}{rng.randint(1, 29)} {rng.randint(1, 9)}"
    postcode += "".join(rng.choice("ABDEFGHJLNPQRSTUWXYZ") for _ in range(2))
    street, city = rng.choice(corpus.STREETS), rng.choice(corpus.CITIES)
    return f"{rng.randint(1, 220)} {street}, {city} {postcode}"


def _user(n: int, seed: int, sessions: int) -> User:
    rng = random.Random(f"{seed}:synthetic:{n}")
    b = _UserBuilder(user_id=f"customer-{n:02d}", rng=rng)
    first, last = rng.choice(corpus.FIRST), rng.choice(corpus.LAST)
    days = sorted(rng.sample(range(YEAR_DAYS), sessions))
    moves = sorted(rng.sample(days[sessions // 5 : -sessions // 8], rng.choice([0, 1, 2, 2])))
    # The once-said facts, spread over the first sessions.
    profile = ["identity", "birth", "contact", "address"]
    profile += ["allergy"] * rng.choice([0, 1, 1, 2])
    profile += ["medication"] * rng.choice([0, 1, 2])
    profile += ["condition"] * rng.choice([0, 1])
    rng.shuffle(profile)
    profile_at = {i: [] for i in range(8)}
    for i, kind in enumerate(profile):
        profile_at[min(7, i // 2)].append(kind)
    allergens = rng.sample(corpus.ALLERGENS, 2)
    medications = rng.sample(corpus.MEDICATIONS, 2)
    addresses: list[_Fact] = []
    weights = list(TOPIC_WEIGHTS.values())
    for index, day in enumerate(days):
        if rng.random() < 0.5:
            b.say("user", rng.choice(GREETINGS))
        for kind in profile_at.get(index, []):
            _profile_fact(b, kind, day, index, first, last, allergens, medications, addresses)
        if day in moves:
            _profile_fact(b, "move", day, index, first, last, allergens, medications, addresses)
        for topic in rng.choices(list(TOPIC_WEIGHTS), weights, k=rng.choice([1, 2, 2, 3])):
            _topic(b, topic, day, index, medications)
        if rng.random() < 0.6:
            bye, reply = rng.choice(GOODBYES)
            b.say("user", bye)
            b.say("agent", reply)
        b.close(day)
    _current_addresses(b, addresses)
    return b.user()


def _current_addresses(b: _UserBuilder, addresses: list[_Fact]) -> None:
    """An address question asked after a later move is about the address current then:
    its evidence is that one, and every address given before it is stale."""
    for i, (text, fact, day, truth) in enumerate(b.pending):
        if fact.kind != "address":
            continue
        said = [a for a in addresses if a.day < day]  # a move on the day comes after
        current = said[-1]
        b.pending[i] = (text, current, day, {**truth, "stale": tuple(a.key for a in said[:-1])})


def _cold(b: _UserBuilder, fact: _Fact, texts: list[str], **truth) -> None:
    """Questions about a high-importance fact, long after it was said."""
    for text in texts:
        day = b.rng.randint(fact.day + 60, YEAR_DAYS + 30)
        b.question(text, fact, day, high=True, **truth)


def _profile_fact(b, kind, day, index, first, last, allergens, medications, addresses) -> None:
    rng = b.rng
    fact = lambda key: _Fact(key, day, index, kind)  # noqa: E731
    if kind == "identity":
        number = rng.randint(1_000_000, 9_999_999)
        f = fact(b.say("user", f"My name is {first} {last}, customer number {number}."))
        b.say("agent", f"Thank you {first}, I've found your account.")
        _cold(b, f, ["What is my customer number?"])
    elif kind == "birth":
        born = START - timedelta(days=rng.randint(20 * 365, 80 * 365))
        f = fact(b.say("user", f"My date of birth is {born:%d %B %Y}."))
        b.say("agent", "Thanks, that matches our records.")
        _cold(b, f, ["What date of birth do you have for me?"])
    elif kind == "contact":
        phone = f"+44 7{rng.randint(100, 999)} {rng.randint(100000, 999999)}"
        email = f"{first.lower()}.{last.lower()}@example.org"
        f = fact(b.say("user", f"My phone number is {phone} and my email is {email}."))
        b.say("agent", "I've saved your contact details.")
        _cold(b, f, ["Which phone number and email do you have for me?"])
    elif kind == "allergy":
        allergen = allergens.pop()
        f = fact(b.say("user", f"Please note I'm allergic to {allergen}."))
        b.say("agent", "I've added that to your allergy list.")
        _cold(b, f, ["What am I allergic to?", "Do I have any allergies you know of?"], pinned=True)
    elif kind == "medication":
        medication = medications.pop()
        dose = rng.choice([5, 10, 20, 40, 100, 250, 500])
        f = fact(b.say("user", f"My regular medication is {medication}, {dose} mg every morning."))
        medications.append(medication)  # refills mention it later
        b.say("agent", "Noted, I'll keep that in mind for your orders.")
        _cold(
            b,
            f,
            ["Which medication do I take regularly?", "What dose of my medication do I take?"],
            pinned=True,
        )
    elif kind == "condition":
        condition = rng.choice(corpus.CONDITIONS)
        f = fact(b.say("user", f"I was diagnosed with {condition} a few years ago."))
        b.say("agent", "Thank you for telling me, I'll take that into account.")
        _cold(b, f, ["What condition was I diagnosed with?"])
    elif kind in ("address", "move"):
        text = (
            f"Please deliver to {_address(rng)}."
            if kind == "address"
            else f"I've moved; my new delivery address is {_address(rng)}."
        )
        f = _Fact(b.say("user", text), day, index, "address")
        b.say("agent", "Done, I've updated the delivery address on your account.")
        addresses.append(f)
        stale = tuple(a.key for a in addresses[:-1])
        asks = 1 if kind == "address" else 2
        for _ in range(asks):
            ask = rng.randint(day + 7, YEAR_DAYS + 30)
            b.question("What is my delivery address?", f, ask, high=True, stale=stale)


def _topic(b: _UserBuilder, topic: str, day: int, index: int, medications: list[str]) -> None:
    rng = b.rng
    v = _fill(rng)
    fact = lambda key: _Fact(key, day, index, topic)  # noqa: E731
    recent = rng.random() < 0.35
    long_tail = rng.random() < 0.25
    if topic == "order":
        b.say("user", f"I'd like to order a {v['product']}.")
        if rng.random() < 0.5:
            b.say("agent", rng.choice(FILLER))
        f = fact(
            b.say(
                "agent",
                f"Order #{v['order']} for the {v['product']} is placed; "
                f"it should arrive on {v['day']}.",
            )
        )
        if recent:
            b.question(f"When will my {v['product']} arrive?", f, day + rng.randint(1, 10))
    elif topic == "complaint":
        f = fact(b.say("user", f"The {v['product']} from order #{v['order']} {v['issue']}."))
        b.say("agent", rng.choice(FILLER))
        b.say("agent", "I'm sorry about that, I've opened a case and you'll hear from us.")
        if recent:
            b.question(f"What was wrong with my {v['product']}?", f, day + rng.randint(1, 14))
        elif long_tail:
            b.question(
                f"What happened with the {v['product']} I complained about?",
                f,
                day + rng.randint(60, 300),
            )
    elif topic == "commitment":
        due = START + timedelta(days=day + rng.randint(3, 20))
        b.say("user", f"Can someone call me back about the {v['product']}?")
        f = fact(
            b.say(
                "agent", f"I've scheduled a call back about the {v['product']} for {due:%A %d %B}."
            )
        )
        if recent:
            b.question(
                f"When is the call back about the {v['product']}?", f, day + rng.randint(1, 3)
            )
    elif topic == "trivia":
        kind = rng.randrange(3)
        if kind == 0:
            event = rng.choice(EVENTS)
            f = fact(b.say("user", f"We're off to {v['city']} for {event} next month."))
            question = f"Where was I travelling for {event}?"
        elif kind == 1:
            animal, name = rng.choice(PETS)
            f = fact(b.say("user", f"My {animal} {name} had a check-up at the vet today."))
            question = f"What is my {animal} called?"
        else:
            hobby = rng.choice(HOBBIES)
            f = fact(b.say("user", f"I've started learning {hobby} on {v['day']} evenings."))
            question = f"Which evening do I learn {hobby}?"
        b.say("agent", rng.choice(["That sounds lovely!", "How nice, enjoy it!"]))
        if long_tail:
            b.question(question, f, day + rng.randint(60, 300))
    elif topic == "preference":
        if rng.random() < 0.5:
            f = fact(b.say("user", f"I prefer deliveries in the {v['time']}, never on {v['day']}."))
            question = "When do I prefer my deliveries?"
        else:
            f = fact(
                b.say(
                    "user",
                    f"My favourite brand of {v['product']} is the {rng.choice(corpus.LAST)} one.",
                )
            )
            question = f"Which brand of {v['product']} do I like?"
        b.say("agent", "Noted, thanks for letting me know.")
        if long_tail:
            b.question(question, f, day + rng.randint(60, 300))
    elif topic == "stock":
        b.say("user", f"Is the {v['product']} in stock at the {v['city']} shop?")
        b.say("agent", rng.choice(FILLER))
        b.say("agent", f"Yes, the {v['city']} shop has the {v['product']} this week.")
    elif topic == "refill" and medications:
        medication = rng.choice(medications)
        b.say("user", f"I need a refill of my {medication} prescription.")
        b.say("agent", f"Your {medication} refill will be ready for collection on {v['day']}.")
    else:  # account, or a refill without a medication
        b.say("user", "Can you send my last invoice again?")
        b.say("agent", rng.choice(FILLER))
        b.say("agent", "I've sent the invoice to the email address on your account.")
