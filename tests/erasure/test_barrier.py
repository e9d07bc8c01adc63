"""The barrier: nothing read before an erasure brings the subject's data back."""

import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from google.adk.sessions.session import Session

from erasure import jobs
from erasure.models import ErasureStatus
from records import erasure_guard, sessions, store, vectors
from records.erasure_guard import ErasedSubjectError, acquire_subject_lock
from records.locks import user_lock
from records.memory_service import EvictingMemoryService
from records.models import MemoryRecord, RecordEmbedding
from tests import embedders

from ..records.factories import text_event
from .helpers import OTHER, USER, erase, submit


def _session_with_memories(app="pharmacy", user=USER, sid="s1"):
    session = sessions.create_session(app_name=app, user_id=user, session_id=sid)
    for text in ("I am allergic to penicillin", "Deliver to 12 Elm Street"):
        sessions.append_event(session, text_event(text))
    return sessions.get_session(app_name=app, user_id=user, session_id=sid)


@pytest.mark.django_db
def test_an_ingest_with_a_session_read_before_the_erasure_leaves_nothing_behind():
    stale = _session_with_memories()  # the agent (or sweeper) read it before the erasure
    req = erase("pharmacy")
    assert req.status == ErasureStatus.VERIFIED
    assert sessions.get_session(app_name="pharmacy", user_id=USER, session_id="s1") is None

    async_to_sync(EvictingMemoryService().add_session_to_memory)(stale)

    assert not MemoryRecord.objects.filter(user_id=USER).exists()
    found = jobs.verify_subject(jobs.Subject("pharmacy", USER))
    assert {k: v["remaining"] for k, v in found.items() if v["remaining"]} == {}


@pytest.mark.django_db
def test_an_ingest_that_started_before_the_barrier_is_refused_and_writes_nothing():
    started = timezone.now()
    candidates = store.extractor_for("pharmacy").from_events(
        "pharmacy", USER, "s1", [text_event("I am allergic to penicillin")]
    )
    erase("pharmacy")
    with pytest.raises(ErasedSubjectError, match=r"erasure #\d+") as refused:
        store.ingest("pharmacy", USER, candidates, started)
    assert USER not in str(refused.value)
    assert not MemoryRecord.objects.filter(user_id=USER).exists()


@pytest.mark.django_db
def test_turns_said_before_the_erasure_are_no_kept_records_context(settings):
    """A session re-delivered after the erasure: the turns said before the barrier are
    dropped, and the turn said after it carries none of them as the turns before it
    (search's context layer, the embedder's text)."""
    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": "tests.embedders.bag_of_concepts"}
    said = time.time() - 60
    old = [
        text_event("My passport number is X1234567", ts=said),
        text_event("Noted, thank you", author="agent", ts=said + 1),
    ]
    erase("pharmacy")
    new = text_event("The roof of the shed leaks when it rains")  # said after the barrier
    session = Session(id="s1", app_name="pharmacy", user_id=USER, events=[*old, new])
    async_to_sync(EvictingMemoryService().add_session_to_memory)(session)
    (kept,) = MemoryRecord.objects.filter(user_id=USER)
    assert kept.content == "The roof of the shed leaks when it rains"
    assert "x1234567" not in kept.search_tokens and "noted" not in kept.search_tokens
    stored = vectors.from_bytes(bytes(RecordEmbedding.objects.get(record_id=kept.id).vector))
    alone = vectors.unit(embedders.vector("user: The roof of the shed leaks when it rains"))
    assert list(stored) == list(alone)


@pytest.mark.django_db
def test_turns_said_before_the_erasure_read_back_from_the_session_are_no_context():
    """``add_events_to_memory`` reads the turns before its batch from the stored session:
    those said before the barrier (appended again after it, with their own times) are
    not the batch's context either."""
    said = time.time() - 60
    erase("pharmacy")
    session = sessions.create_session(app_name="pharmacy", user_id=USER, session_id="s1")
    for text, ts in (("My passport number is X1234567", said), ("Noted, thank you", said + 1)):
        sessions.append_event(session, text_event(text, ts=ts))
    new = sessions.append_event(session, text_event("The roof of the shed leaks when it rains"))
    async_to_sync(EvictingMemoryService().add_events_to_memory)(
        app_name="pharmacy", user_id=USER, events=[new], session_id="s1"
    )
    (kept,) = MemoryRecord.objects.filter(user_id=USER)
    assert kept.content == "The roof of the shed leaks when it rains"
    assert "x1234567" not in kept.search_tokens and "noted" not in kept.search_tokens


@pytest.mark.django_db
def test_new_data_after_the_erasure_is_kept():
    erase("pharmacy")
    fresh = sessions.create_session(app_name="pharmacy", user_id=USER, session_id="s2")
    sessions.append_event(fresh, text_event("My name is Ana", ts=time.time() + 1))
    result = EvictingMemoryService()
    async_to_sync(result.add_session_to_memory)(
        sessions.get_session(app_name="pharmacy", user_id=USER, session_id="s2")
    )
    assert MemoryRecord.objects.filter(user_id=USER, content="My name is Ana").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["one app", "all apps"])
def test_a_barrier_covers_its_scope_only(scope):
    old = [text_event("I am allergic to penicillin", ts=time.time() - 60)]
    erase("pharmacy" if scope == "one app" else None)
    now = timezone.now()
    for app, user, kept in (
        ("pharmacy", USER, 0),
        ("pharmacy", OTHER, 1),
        ("travel", USER, 1 if scope == "one app" else 0),
    ):
        candidates = store.extractor_for(app).from_events(app, user, "s9", old)
        assert store.ingest(app, user, candidates, now).added == kept, (app, user)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_ingest_in_flight_when_the_barrier_is_raised_is_waited_for_and_erased():
    """PostgreSQL: the barrier waits (subject lock) for an ingest of any app that already
    passed the check; its records are then erased with the rest."""
    req = submit(None)
    inside, release = threading.Event(), threading.Event()

    def in_flight_ingest():
        try:
            with user_lock("travel", USER):
                acquire_subject_lock(USER, exclusive=False)  # as erasure_guard.barrier_held does
                now = timezone.now()
                MemoryRecord.objects.create(
                    app_name="travel",
                    user_id=USER,
                    content="window seat",
                    created_at=now,
                    last_accessed_at=now,
                )
                inside.set()
                assert release.wait(timeout=30)
        finally:
            connections.close_all()

    ingest = threading.Thread(target=in_flight_ingest)
    ingest.start()
    assert inside.wait(timeout=30)
    outcome = {}
    job = threading.Thread(
        target=lambda: (outcome.setdefault("status", jobs.run(req.pk)), connections.close_all())
    )
    job.start()
    for _ in range(600):  # bounded: until the job waits on the subject lock
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            if cursor.fetchone()[0]:
                break
        time.sleep(0.05)
    else:
        pytest.fail("the erasure never waited for the in-flight ingest")
    release.set()
    ingest.join(timeout=30)
    job.join(timeout=60)
    assert outcome["status"] == ErasureStatus.VERIFIED
    assert not MemoryRecord.objects.filter(user_id=USER).exists()


@pytest.mark.django_db
def test_erased_since_names_the_users_a_barrier_covering_the_app_came_after():
    """What a dry-run item read at a moment must not be written for a user whose
    erasure had not finished deleting then: this app's and all-apps erasures raised
    after the moment, or raised before it and still deleting; not one complete before
    the moment (what was read since is new data), nor another app's."""
    erase("pharmacy", "before")  # complete before the moment: new data since is welcome
    still_deleting = submit("pharmacy", "deleting")
    token = jobs._claim(still_deleting.pk, timezone.now, "t")
    job = jobs._Job(still_deleting.pk, token, "t", timezone.now, 100)
    job.raise_barrier()
    moment = timezone.now()
    erase("pharmacy", "here")
    erase("travel", "elsewhere")  # another app's erasure
    erase(None, "everywhere")  # all apps
    users = ["before", "deleting", "here", "elsewhere", "everywhere", "never"]
    with transaction.atomic():
        erased = erasure_guard.erased_since("pharmacy", users, moment)
        assert erased == {"deleting", "here", "everywhere"}
        assert erasure_guard.erased_since("pharmacy", [], moment) == set()
    # Once that erasure completes, an item that starts reading afterwards writes its lines.
    assert job.run() == ErasureStatus.VERIFIED
    with transaction.atomic():
        assert "deleting" not in erasure_guard.erased_since("pharmacy", users, timezone.now())
    with transaction.atomic():  # one user at a time, as an ingest reads it
        barriers = {u: erasure_guard.barrier_held("pharmacy", u) for u in users}
    # An ingest goes by the raise time (and drops content stamped before it).
    raised_after = {u for u, b in barriers.items() if b and b[0] > moment}
    assert raised_after == {"here", "everywhere"}
    assert barriers["deleting"] is not None and barriers["never"] is None


@pytest.mark.django_db
def test_erased_since_takes_the_same_number_of_statements_for_many_users():

    moment = timezone.now()
    counts = []
    for n in (2, 40):
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            erasure_guard.erased_since("pharmacy", [f"user-{i}" for i in range(n)], moment)
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 2, counts


def test_subject_locks_are_refused_outside_a_transaction():
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        erasure_guard.erased_since("pharmacy", ["u"], timezone.now())
