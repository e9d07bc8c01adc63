"""The erasure job: complete, scoped to its subject, verified, resumable, not eviction."""

import json
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from erasure import jobs
from erasure.inventory import SUBJECT_STORES, Subject
from erasure.models import ErasureAuditEntry, ErasureBarrier, ErasureRequest, ErasureStatus
from memadmin.pseudonyms import subject_hash
from records import sessions, touches
from records.models import DailyCounter, EvictionEvent, MemoryRecord, SearchLog
from records.policies import update_policy

from .conftest import fts_terms, populate, redis_entries, rows_mentioning, subject_counts
from .helpers import OTHER, USER, erase, submit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("scope", ["one app", "all apps"])
def test_erasure_leaves_nothing_of_the_subject_and_everything_of_everyone_else(scope):
    """The mem0 "delete all deletes everyone" bug, as a regression test."""
    erased = populate("pharmacy", USER, "mk1x9q")
    other_user = populate("pharmacy", OTHER, "mk2x9q")
    same_user_elsewhere = populate("travel", USER, "mk3x9q")
    # A user id that contains the subject's, so a prefix or substring match would show.
    longer_id = populate("pharmacy", USER + "0", "mk4x9q")
    evictions_before = EvictionEvent.objects.exclude(user_id=USER).count()
    counters_before = list(DailyCounter.objects.order_by("pk").values())

    req = erase("pharmacy" if scope == "one app" else None)

    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    expected = (
        erased if scope == "one app" else {k: n + same_user_elsewhere[k] for k, n in erased.items()}
    )
    assert {k: v["deleted"] for k, v in req.progress.items() if k in erased} == expected
    assert all(erased.values())  # every store had something to erase
    assert subject_counts(Subject("pharmacy", USER)) == dict.fromkeys(erased, 0)
    assert subject_counts(Subject("pharmacy", OTHER)) == other_user
    assert subject_counts(Subject("pharmacy", USER + "0")) == longer_id
    if scope == "one app":
        assert subject_counts(Subject("travel", USER)) == same_user_elsewhere
    else:
        assert subject_counts(Subject("travel", USER)) == dict.fromkeys(erased, 0)

    # A scan of every table, not only the stores the inventory names.
    assert rows_mentioning("mk1x9q") == []
    assert fts_terms("mk1x9q") == []
    assert redis_entries("pharmacy", USER) == []
    leftovers = [
        (label, row)
        for label, row in rows_mentioning(USER)
        if not (
            row.get("user_id") == USER + "0"
            or row.get("users") == [USER + "0"]  # a sweeper batch naming the longer id
            or (scope == "one app" and row.get("app_name") == "travel")
        )
    ]
    assert leftovers == []
    for marker in ("mk2x9q", "mk4x9q") + (("mk3x9q",) if scope == "one app" else ()):
        assert rows_mentioning(marker), f"{marker} was erased with the subject"
        if connection.vendor == "sqlite":
            assert fts_terms(marker) == [marker]
    if touches.buffering():
        assert redis_entries("pharmacy", OTHER)
        assert redis_entries("pharmacy", USER + "0")
        assert bool(redis_entries("travel", USER)) == (scope == "one app")

    # Erasure is not eviction: no eviction events, no counters moved.
    assert EvictionEvent.objects.exclude(user_id=USER).count() == evictions_before
    assert list(DailyCounter.objects.order_by("pk").values()) == counters_before


def test_the_request_keeps_only_the_keyed_hash_once_verified():
    populate("pharmacy", USER, "mk1x9q")
    req = erase("pharmacy")
    assert req.user_id == "" and req.subject_hash == subject_hash(USER)
    assert ErasureRequest.objects.filter(subject_hash=subject_hash(USER)).count() == 1
    receipt = json.dumps(req.receipt)
    audit = json.dumps(list(ErasureAuditEntry.objects.values()), default=str)
    barrier = json.dumps(list(ErasureBarrier.objects.values()), default=str)
    for text in (receipt, audit, barrier, req.failure_reason, json.dumps(req.progress)):
        assert USER not in text
        assert "mk1x9q" not in text and "penicillin" not in text


def test_a_large_subject_is_erased_in_bounded_batches():
    now = timezone.now()
    MemoryRecord.objects.bulk_create(
        [
            MemoryRecord(
                app_name="pharmacy",
                user_id=USER,
                content=f"note {i}",
                created_at=now,
                last_accessed_at=now,
                tokens=2,
            )
            for i in range(20_000)
        ],
        batch_size=5000,
    )
    populate("pharmacy", OTHER, "mk2x9q")
    req = erase("pharmacy", batch=1000)
    assert req.status == ErasureStatus.VERIFIED
    assert req.progress["records.MemoryRecord"] == {"deleted": 20_000, "batches": 20, "done": True}
    assert MemoryRecord.objects.filter(user_id=OTHER).exists()


def _refuse_deletes_of(table: str):
    """A fault in the database itself: deleting from ``table`` fails (not a mock)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION test_disk_on_fire() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'disk on fire'; END; $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                f"CREATE TRIGGER test_disk_on_fire BEFORE DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION test_disk_on_fire()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER test_disk_on_fire BEFORE DELETE ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
            )

    def undo():
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER test_disk_on_fire ON {table}")
                cursor.execute("DROP FUNCTION test_disk_on_fire()")
            else:
                cursor.execute("DROP TRIGGER test_disk_on_fire")

    return undo


def test_a_failure_midway_is_loud_and_a_retry_resumes_with_exact_counts():
    expected = populate("pharmacy", USER, "mk1x9q")
    undo = _refuse_deletes_of("records_userstate")
    req = erase("pharmacy", batch=2)
    assert req.status == ErasureStatus.FAILED
    assert req.failure_reason.startswith("records.UserState: ")
    # The database's error by its class (and SQLSTATE on PostgreSQL), its text withheld:
    # it can quote stored values, and the request and its audit entries outlive them.
    assert "Error" in req.failure_reason and "withheld" in req.failure_reason
    assert "disk on fire" not in req.failure_reason
    assert req.user_id == USER  # kept: the retry needs it
    assert req.progress["records.MemoryRecord"]["done"] is True
    assert "records.UserState" not in req.progress or not req.progress["records.UserState"]["done"]
    assert not MemoryRecord.objects.filter(user_id=USER).exists()  # committed batch by batch

    undo()
    jobs.retry(req.pk, actor="tests", enqueue_job=False)
    assert jobs.run(req.pk, batch=2) == ErasureStatus.VERIFIED
    req.refresh_from_db()
    assert req.attempts == 2
    assert {k: req.progress[k]["deleted"] for k in expected} == expected
    actions = list(req.audit.values_list("action", flat=True))
    assert actions.count("failed") == 1 and actions.count("retried") == 1
    assert actions.count("barrier_raised") == 1  # the barrier stays up across attempts


def test_a_stalled_run_is_handed_on_and_the_stale_run_stops_at_its_next_batch():
    expected = populate("pharmacy", USER, "mk1x9q")
    req = submit("pharmacy")
    now = timezone.now()
    # A worker that claimed the request and died (no heartbeat since).
    stale_token = jobs._claim(req.pk, lambda: now, "dead-worker")
    assert stale_token is not None
    assert jobs.run(req.pk) == "skipped"  # a re-delivery while the lease is fresh
    assert jobs.reconcile(now + timedelta(seconds=30)) == []  # lease not over yet

    assert jobs.reconcile(now + jobs.lease() + timedelta(seconds=1)) == [req.pk]
    stale = jobs._Job(req.pk, stale_token, "dead-worker", timezone.now, 100)
    with pytest.raises(jobs.LostClaim):
        stale.erase_store(SUBJECT_STORES[0])

    assert jobs.run(req.pk, task_id="second-worker") == ErasureStatus.VERIFIED
    req.refresh_from_db()
    assert {k: req.progress[k]["deleted"] for k in expected} == expected
    assert req.attempts == 2
    assert list(req.audit.values_list("action", flat=True))[:4] == [
        "submitted",
        "running",
        "requeued",
        "resumed",
    ]


def test_data_written_while_the_job_runs_fails_verification_loudly_then_a_retry_erases_it():
    populate("pharmacy", USER, "mk1x9q")
    req = submit("pharmacy")
    token = jobs._claim(req.pk, timezone.now, "t")
    job = jobs._Job(req.pk, token, "t", timezone.now, 100)
    job.raise_barrier()
    for store in SUBJECT_STORES:
        job.erase_store(store)
    # The subject opens a new session while the job is still running.
    sessions.create_session(app_name="pharmacy", user_id=USER, session_id="new-one")
    job.erase_redis()
    job.complete()
    assert job.verify() == ErasureStatus.FAILED
    req.refresh_from_db()
    assert "records.AgentSession (1)" in req.failure_reason
    assert req.verification["records.AgentSession"]["remaining"] == 1

    jobs.retry(req.pk, actor="tests", enqueue_job=False)
    assert jobs.run(req.pk) == ErasureStatus.VERIFIED


def test_policy_tuning_does_not_change_erasure():
    populate("pharmacy", USER, "mk1x9q")
    update_policy("pharmacy", {"max_records": 1, "summarise": True, "summarise_min_cluster": 2})
    req = erase("pharmacy")
    assert req.status == ErasureStatus.VERIFIED
    assert not MemoryRecord.objects.filter(user_id=USER).exists()
    assert not EvictionEvent.objects.exists()  # the manual one went; erasure wrote none


def test_an_empty_subject_is_refused_everywhere():
    with pytest.raises(ValueError, match="non-empty user id"):
        Subject("pharmacy", "")
    with pytest.raises(jobs.ErasureRefused):
        submit("pharmacy", user="")
    with pytest.raises(jobs.ErasureRefused):
        submit("pharmacy", user="   ")


def test_erasing_a_subject_with_no_data_verifies_with_zero_counts():
    req = erase(None, user="never-seen-anywhere")
    assert req.status == ErasureStatus.VERIFIED
    assert all(p["deleted"] == 0 for p in req.progress.values())


@pytest.mark.redis
def test_a_search_buffered_before_the_erasure_is_not_brought_back_by_a_flush():
    """A flush that claimed the subject's buffered search before the job reached Redis
    must not write it after the job erased the database."""
    populate("pharmacy", USER, "mk1x9q")
    assert touches.user_keys("pharmacy", USER)["log"] in touches.user_touch_keys_present(
        "pharmacy", USER
    )
    req = submit("pharmacy")
    token = jobs._claim(req.pk, timezone.now, "t")
    job = jobs._Job(req.pk, token, "t", timezone.now, 100)
    job.raise_barrier()
    for store in SUBJECT_STORES:
        job.erase_store(store)
    touches.flush_touches()  # before the job's Redis step
    assert not SearchLog.objects.filter(user_id=USER).exists()
    assert subject_counts(Subject("pharmacy", USER))["records.SearchLog"] == 0


@pytest.mark.parametrize("buffered", [False, pytest.param(True, marks=pytest.mark.redis)])
def test_a_search_answered_before_the_erasure_and_noted_after_it_leaves_nothing(settings, buffered):
    """An agent's turn: the answer is read, the erasure runs, then the search's writes
    (touches, history) land. They must not bring the subject back: written directly
    (no Redis), the history row is dropped by the barrier; buffered, the next flush
    drops it and empties the buffer."""
    from records import search

    if not buffered:
        settings.REDIS_URL = ""
        touches.redis_client.cache_clear()
    populate("pharmacy", USER, "mk1x9q")
    now = timezone.now()
    found = search.find("pharmacy", USER, "mk1x9q", now)
    assert found.records
    assert erase("pharmacy").status == ErasureStatus.VERIFIED
    search.note("pharmacy", USER, found, now)
    if buffered:
        touches.flush_touches()
        assert redis_entries("pharmacy", USER) == []
    assert not SearchLog.objects.filter(user_id=USER).exists()
    assert all(n == 0 for n in subject_counts(Subject("pharmacy", USER)).values())
    # A search made after the erasure is new data, kept as any other.
    later = timezone.now()  # after the barrier
    search.note("pharmacy", USER, search.find("pharmacy", USER, "mk1x9q", later), later)
    if buffered:
        touches.flush_touches()
    assert SearchLog.objects.filter(user_id=USER).count() == 1


@pytest.mark.parametrize("scope", ["one app", "all apps"])
def test_erasure_deletes_the_subjects_vectors_and_says_so_on_the_receipt(scope):
    from records.models import RecordEmbedding

    populate("pharmacy", USER, "mk1x9q")
    populate("travel", USER, "mk3x9q")
    populate("pharmacy", OTHER, "mk2x9q")
    erased_apps = ["pharmacy"] if scope == "one app" else ["pharmacy", "travel"]
    theirs = set(
        MemoryRecord.objects.filter(user_id=USER, app_name__in=erased_apps).values_list(
            "id", flat=True
        )
    )
    vectors_before = set(RecordEmbedding.objects.values_list("record_id", flat=True))
    assert theirs & vectors_before  # the subject had vectors
    others = vectors_before - theirs

    req = erase("pharmacy" if scope == "one app" else None)

    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    left = set(RecordEmbedding.objects.values_list("record_id", flat=True))
    assert left & theirs == set()  # by record id: no vector outlives its record
    assert left == others  # everyone else's vectors are untouched
    stores = {s["store"]: s for s in req.receipt["stores"]}
    vectors_row = stores["records.RecordEmbedding"]
    assert vectors_row["deleted"] == len(theirs & vectors_before)
    assert vectors_row["remaining_at_verification"] == 0
    assert "vectors" in vectors_row["holds"]


def test_vectors_written_after_their_store_was_erased_are_counted_with_the_records(
    monkeypatch, settings
):
    """An ingest embeds after the user's lock is released and the back-fill takes none:
    a vector can be written once the vector store is done, before the records go. The
    records' store deletes it first and counts it as a vector, so the receipt is true."""
    from records import embeddings
    from records.models import RecordEmbedding

    populate("pharmacy", USER, "mk1x9q")
    RecordEmbedding.objects.all().delete()  # none yet: the subject's come mid-erasure
    theirs = MemoryRecord.objects.filter(user_id=USER).count()
    real = jobs._Job.erase_store

    def erase_store(self, store):
        real(self, store)
        if store.label == "records.RecordEmbedding":  # the back-fill runs just then
            assert RecordEmbedding.objects.count() == 0
            settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": "tests.embedders.bag_of_concepts"}
            assert embeddings.backfill(app_name="pharmacy").embedded == theirs

    monkeypatch.setattr(jobs._Job, "erase_store", erase_store)
    req = erase("pharmacy")
    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    assert RecordEmbedding.objects.count() == 0
    stores = {s["store"]: s for s in req.receipt["stores"]}
    assert stores["records.RecordEmbedding"]["deleted"] == theirs
    assert stores["records.MemoryRecord"]["deleted"] == theirs


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_vector_written_while_the_records_are_erased_is_counted():
    """A writer (ingest's embedding, the back-fill) has locked a record against deletion
    and inserted its vector, uncommitted, as the records' batch is erased: the batch
    waits for it, then deletes and counts that vector, rather than the database's cascade
    deleting it uncounted after the records' delete."""
    import threading

    from records import embeddings, vectors
    from records.models import RecordEmbedding
    from tests import embedders

    from ..conftest import run_until_it_waits, wait_until

    populate("pharmacy", USER, "mk1x9q")
    RecordEmbedding.objects.all().delete()
    theirs = dict(MemoryRecord.objects.filter(user_id=USER).values_list("id", "content"))
    pairs = [(i, vectors.unit(embedders.vector(text))) for i, text in theirs.items()]
    written, commit = threading.Event(), threading.Event()

    def writer():  # the writer's own statements, its commit held back
        try:
            with transaction.atomic():
                embeddings._store(pairs)
                written.set()
                commit.wait(timeout=120)
        finally:
            connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_until(written.is_set, message="the vectors to be written")
        req = run_until_it_waits(lambda: erase("pharmacy"), lambda _pid: commit.set(), "erasure")
    finally:
        commit.set()
        thread.join(timeout=120)
    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    assert RecordEmbedding.objects.count() == 0
    stores = {s["store"]: s for s in req.receipt["stores"]}
    assert stores["records.RecordEmbedding"]["deleted"] == len(theirs)


def test_an_app_named_with_a_control_character_before_the_rule_can_still_be_erased():
    """App names may no longer hold control characters; one stored earlier is erasable."""
    now = timezone.now()
    app = "legacy\x1fapp"
    MemoryRecord.objects.create(
        app_name=app, user_id=USER, content="I am allergic to penicillin", created_at=now,
        last_accessed_at=now, tokens=5, importance=0.5,
    )  # fmt: skip
    req = erase(app)
    assert req.status == ErasureStatus.VERIFIED, req.failure_reason
    assert not MemoryRecord.objects.filter(user_id=USER).exists()
