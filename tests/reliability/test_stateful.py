"""A stateful model of memadmin: insert, pin, access, advance the clock, sweep, enforce,
erase, in any order hypothesis finds, with the invariants checked after every step.

The real services run on the real database; the model only tracks what must be true:
every record ever stored is still there, or was evicted (with an eviction event), or
was erased with its user; pins survive everything but erasure; after every write the
caps hold unless only pinned records remain; nothing is stored twice.
"""

import os
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone
from google.adk.platform import time as platform_time
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from erasure import jobs
from erasure.inventory import SUBJECT_STORES, Subject
from records import sessions, store
from records.erasure_guard import ErasedSubjectError
from records.memory_service import add_session, search_entries
from records.models import EvictionEvent, MemoryRecord, UserMemoryStats
from records.policies import update_policy
from records.staff import pin_record
from sweeper.sweep import idle_session_ids, retire_session

from ..records.factories import text_event

APP = "app"
USERS = ("ana", "bo", "cy")
TEXTS = (
    "My name is {u}",
    "Deliver to {n} Mill Lane",
    "Order #{n} is late",
    "I am allergic to latex",
    "What time do you open",
    "I prefer email",
    "The courier was rude",
    "Lovely weather today number {n}",
)


class Memadmin(RuleBasedStateMachine):
    sessions_made = Bundle("sessions")

    @initialize()
    def start(self):
        # Each example runs in a savepoint that is rolled back at teardown.
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        update_policy(
            APP,
            {
                "max_records": 8,
                "max_tokens": 120,
                "ttl_days": 30,
                "half_life_hours": 120,
                "session_idle_days": 2,
            },
        )
        self.clock = timezone.now()
        # ADK's clock is the model's: events stamped at it are "now", however far it moved.
        platform_time.set_time_provider(lambda: self.clock.timestamp())
        self.stored: set[int] = set()
        self.owner: dict[int, str] = {}
        self.pinned: set[int] = set()
        self.erased_ids: set[int] = set()
        self.counter = 0
        self.staff = User.objects.create_user("support-model")

    def teardown(self):
        platform_time.reset_time_provider()
        if hasattr(self, "atomic"):
            transaction.set_rollback(True)
            self.atomic.__exit__(None, None, None)

    # --- steps --------------------------------------------------------------------

    @rule(
        target=sessions_made,
        user=st.sampled_from(USERS),
        picks=st.lists(st.integers(0, len(TEXTS) - 1), min_size=1, max_size=5),
    )
    def converse(self, user, picks):
        self.counter += 1
        sid = f"s{self.counter}"
        stamp = self.clock.timestamp()
        session = sessions.create_session(app_name=APP, user_id=user, session_id=sid, now=stamp)
        for i, p in enumerate(picks):
            text = TEXTS[p].format(u=user, n=self.counter * 10 + i)
            sessions.append_event(session, text_event(text, id=f"{sid}-{i}", ts=stamp + i * 1e-3))
        full = sessions.get_session(app_name=APP, user_id=user, session_id=sid)
        self._ingest(full)
        return (user, sid)

    @rule(ref=sessions_made)
    def reingest(self, ref):
        user, sid = ref
        full = sessions.get_session(app_name=APP, user_id=user, session_id=sid)
        if full is not None:  # retired or erased sessions are gone
            self._ingest(full)

    def _ingest(self, session):
        before = set(MemoryRecord.objects.values_list("id", flat=True))
        try:
            add_session(session, self.clock)
        except ErasedSubjectError:
            return
        new = set(MemoryRecord.objects.values_list("id", flat=True)) - before
        self.stored |= new
        self.owner.update(dict.fromkeys(new, session.user_id))

    @rule(user=st.sampled_from(USERS), data=st.data())
    def pin(self, user, data):
        ids = sorted(
            MemoryRecord.objects.filter(app_name=APP, user_id=user, pinned=False).values_list(
                "id", flat=True
            )
        )
        if not ids:
            return
        record_id = data.draw(st.sampled_from(ids))
        pin_record(self.staff, APP, user, record_id, reason="the model pins it")
        self.pinned.add(record_id)

    @rule(
        user=st.sampled_from(USERS),
        word=st.sampled_from(["name", "deliver", "order", "allergic", "email"]),
    )
    def access(self, user, word):
        search_entries(APP, user, word, self.clock)

    @rule(days=st.integers(1, 40))
    def advance(self, days):
        self.clock += timedelta(days=days)

    @rule(user=st.sampled_from(USERS))
    def enforce(self, user):
        store.enforce(APP, user, self.clock)
        self.check_no_expired(user)

    @rule(user=st.sampled_from(USERS))
    def sweep(self, user):
        for sid in idle_session_ids(APP, user, self.clock):
            before = set(MemoryRecord.objects.values_list("id", flat=True))
            retire_session(APP, user, sid, self.clock)
            new = set(MemoryRecord.objects.values_list("id", flat=True)) - before
            self.stored |= new
            self.owner.update(dict.fromkeys(new, user))
        assert idle_session_ids(APP, user, self.clock) == []

    @rule(user=st.sampled_from(USERS))
    def erase(self, user):
        # everything the user ever had: erasure takes their eviction log with it
        ids = {i for i, owner in self.owner.items() if owner == user}
        req = jobs.submit(
            app_name=APP,
            user_id=user,
            user_id_again=user,
            ticket="T",
            reason="test",
            actor="model",
            now=self.clock,
            enqueue_job=False,
        )
        status = jobs.run(req.pk, clock=lambda: self.clock)
        assert status == "verified", status
        self.erased_ids |= ids
        self.pinned -= ids
        subject = Subject(APP, user)
        assert all(s.rows(subject).count() == 0 for s in SUBJECT_STORES)
        self.clock += timedelta(seconds=1)  # what the user says next comes after it

    # --- invariants ----------------------------------------------------------------

    def check_no_expired(self, user):
        cutoff = self.clock - timedelta(days=30)
        assert not MemoryRecord.objects.filter(
            app_name=APP, user_id=user, pinned=False, created_at__lt=cutoff
        ).exists()

    @invariant()
    def caps_hold_unless_only_pins_remain(self):
        if not hasattr(self, "clock"):
            return
        for user in USERS:
            live = MemoryRecord.objects.filter(app_name=APP, user_id=user)
            n = live.count()
            tokens = sum(live.values_list("tokens", flat=True))
            if n > 8 or tokens > 120:
                assert not live.filter(pinned=False).exists(), (user, n, tokens)

    @invariant()
    def user_stats_equal_the_records(self):
        if not hasattr(self, "clock"):
            return
        live = {
            (r["app_name"], r["user_id"]): (r["n"], r["t"] or 0, r["p"])
            for r in MemoryRecord.objects.values("app_name", "user_id").annotate(
                n=Count("id"), t=Sum("tokens"), p=Count("id", filter=Q(pinned=True))
            )
        }
        kept = {
            (s.app_name, s.user_id): (s.records, s.tokens, s.pinned)
            for s in UserMemoryStats.objects.all()
        }
        assert kept == live

    @invariant()
    def pins_survive_everything_but_erasure(self):
        if not hasattr(self, "clock"):
            return
        present = set(MemoryRecord.objects.filter(pinned=True).values_list("id", flat=True))
        assert self.pinned <= present

    @invariant()
    def every_record_is_present_evicted_or_erased_and_never_twice(self):
        if not hasattr(self, "clock"):
            return
        present = set(MemoryRecord.objects.values_list("id", flat=True))
        evicted = set(EvictionEvent.objects.values_list("record_id", flat=True))
        assert self.stored <= present | evicted | self.erased_ids
        assert not present & evicted
        assert not (
            MemoryRecord.objects.exclude(dedupe_key=None)
            .values("app_name", "user_id", "dedupe_key")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .exists()
        )


Memadmin.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMADMIN_STATEFUL_EXAMPLES", "25")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.django_db
def test_memadmin_state_machine():
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(Memadmin, settings=Memadmin.TestCase.settings)
