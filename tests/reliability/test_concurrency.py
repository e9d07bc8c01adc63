"""Concurrency and dropped connections on PostgreSQL, with real threads and connections."""

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.db.models import Count
from django.utils import timezone

from records import store
from records.memory_service import add_session
from records.models import EvictionEvent, MemoryRecord
from records.policies import update_policy
from records.staff import pin_record
from sweeper import runs, tasks
from sweeper.models import ItemStatus, RunKind, RunStatus, WorkItem

from ..conftest import run_until_it_waits
from ..records.factories import make_records, session
from ..sweeper.helpers import make_session

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

APP, USER = "pharmacy", "u1"


def in_threads(*targets):
    """Start all targets together; re-raise the first error. Connections closed after."""
    barrier, errors = threading.Barrier(len(targets)), []

    def wrap(fn):
        def run():
            try:
                barrier.wait(timeout=30)
                fn()
            except Exception as exc:  # reported to the test below
                errors.append(exc)
            finally:
                connections.close_all()

        return run

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock: a thread never finished"
    if errors:
        raise errors[0]


def test_eight_ingests_a_sweep_and_a_pin_at_once_keep_the_caps_exactly(make_user):
    update_policy(APP, {"max_records": 40, "max_tokens": 10**6})
    now = timezone.now()
    old = make_records(
        APP, USER, 35, now, importance=0.1, age=timedelta(days=50), accessed_ago=timedelta(days=50)
    )
    keep = old[0]
    make_session(APP, USER, "idle", [f"Order #{i} for metformin" for i in range(5)], idle_days=10)
    support = make_user("sam", "support")

    def ingest(k):
        return lambda: add_session(
            session(
                [f"My name is Ana, visit {k} line {j}" for j in range(4)]
                + ["Deliver to 4 Mill Lane"],
                app=APP,
                user=USER,
                id=f"chat-{k}",
            ),
            timezone.now(),
        )

    def sweep():
        tasks.run_inline(runs.create_run(RunKind.SWEEP, enqueue=False))

    pinned = []

    def pin():
        # The pin races the ingests' evictions of this very record (the first victim
        # of its kind): either it lands first and the record then survives them all, or
        # the record is gone and the pin says so, with the eviction logged.
        try:
            pin_record(support, APP, USER, keep.id, reason="allergy")
            pinned.append(True)
        except MemoryRecord.DoesNotExist:
            pinned.append(False)

    in_threads(pin, *(ingest(k) for k in range(8)), sweep)

    records = MemoryRecord.objects.filter(app_name=APP, user_id=USER)
    assert records.count() == 40  # the cap holds exactly: not over, not over-evicted
    if pinned == [True]:
        assert records.filter(id=keep.id, pinned=True).exists()
    else:
        assert pinned == [False]
        assert EvictionEvent.objects.filter(record_id=keep.id).count() == 1
    assert (
        not records.values("dedupe_key")
        .exclude(dedupe_key=None)
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .exists()
    )
    # every eviction is logged once, and nothing evicted is still there
    evicted = list(EvictionEvent.objects.values_list("record_id", flat=True))
    assert len(evicted) == len(set(evicted))
    assert not records.filter(id__in=evicted).exists()
    # 35 + 8*5 + 5 stored, 40 kept: the rest were evicted, none lost without a trace
    assert records.count() + len(evicted) == 35 + 8 * 5 + 5


def _terminate(pid):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_dropped_connection_mid_eviction_rolls_back_and_the_retry_succeeds():
    update_policy(APP, {"max_records": 10})
    now = timezone.now()
    records = make_records(APP, USER, 2500, now, importance=0.1)
    # Equal records rank by id: the victims are the 2490 lowest ids, deleted in chunks of
    # 1000, so the last victim is deleted last.
    blocker = records[2489]
    with transaction.atomic(), pytest.raises(OperationalError):
        # Hold one victim's row: the enforcement blocks there, after it has logged all
        # evictions and deleted the first thousands of records, in its transaction.
        MemoryRecord.objects.select_for_update().filter(id=blocker.id).first()
        run_until_it_waits(lambda: store.enforce(APP, USER, now), _terminate, "enforcement")
    connections.close_all()
    # nothing half-evicted: every record is there, no eviction was logged
    assert MemoryRecord.objects.filter(user_id=USER).count() == 2500
    assert EvictionEvent.objects.count() == 0
    victims = store.enforce(APP, USER, timezone.now())  # the retry
    assert len(victims) == 2490 and MemoryRecord.objects.count() == 10


def test_a_task_that_loses_its_connection_gives_its_claim_back_and_is_retried():
    update_policy(APP, {"max_records": 1})
    make_records(APP, USER, 3, timezone.now())
    run = runs.create_run(RunKind.ENFORCE, enqueue=False)
    token = runs.claim_run(run.id)
    from sweeper.enforce import plan_items

    runs.fan_out(run, token, plan_items(run))
    item = WorkItem.objects.get(run=run)
    # called directly, the task's Celery retry re-raises the cause
    with transaction.atomic(), pytest.raises(OperationalError):
        MemoryRecord.objects.select_for_update().filter(user_id=USER).first()
        run_until_it_waits(lambda: tasks.run_item(item.id), _terminate, "the task")
    connections.close_all()
    item.refresh_from_db()
    assert (item.status, item.claim_token, item.claimed_at) == (ItemStatus.PLANNED, "", None)
    tasks.run_item(item.id)  # the retry
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and MemoryRecord.objects.count() == 1


def test_a_touch_flush_never_waits_for_an_evictions_rows():
    """The flush locks touched rows in id order, an eviction in its victims' order: were
    the flush to go for the rows while an eviction holds some, the two could deadlock
    and PostgreSQL abort either (an ingest, failing the agent's turn). It tries the
    user's lock first, as ingest, eviction and erasure take it, and while it is held
    writes nothing and leaves the touches for the next flush; then it applies them."""
    from records.locks import user_lock
    from records.policy import Score
    from records.touches import apply_user_touches
    from records.victims import SelectedVictim

    now = timezone.now()
    make_records(APP, USER, 40, now)
    ids = sorted(MemoryRecord.objects.values_list("id", flat=True))
    victims = [
        SelectedVictim(
            id=i,
            user_id=USER,
            reason="record_cap",
            tokens=1,
            score=Score(0, 0, 0, 0),
            dedupe_key="",
        )
        for i in reversed(ids[:20])
    ]
    evicted, release = threading.Event(), threading.Event()

    def evict():  # as ingest evicts: under the user's lock, holding the rows it deleted
        try:
            with user_lock(APP, USER):
                store.evict(APP, victims, now, policy_version=1)
                evicted.set()
                assert release.wait(timeout=60)
                transaction.set_rollback(True)
        finally:
            connections.close_all()

    touched = (APP, USER, dict.fromkeys(ids, 1), dict.fromkeys(ids, now), [])
    holder = threading.Thread(target=evict)
    holder.start()
    try:
        assert evicted.wait(timeout=60)
        assert apply_user_touches(*touched) is False  # at once: no wait, nothing written
        assert not MemoryRecord.objects.filter(hits__gt=0).exists()
    finally:
        release.set()
        holder.join(timeout=60)
    assert apply_user_touches(*touched) is True
    assert MemoryRecord.objects.filter(hits=1).count() == len(ids)
