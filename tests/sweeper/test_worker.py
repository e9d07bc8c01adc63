"""The sweeper's tasks on a real Celery worker process (Redis or the filesystem broker)."""

import pytest
from django.db.models import Count

from records.models import AgentSession, MemoryRecord, RetiredSession
from records.policies import update_policy
from sweeper import runs, tasks
from sweeper.models import DailyMetric, Run, RunKind, RunStatus

from ..conftest import wait_until
from ..records.factories import make_records
from .helpers import make_session

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def finished(run_id):
    run = Run.objects.get(id=run_id)
    return run if run.status in (RunStatus.DONE, RunStatus.FAILED) else None


def test_a_sweep_and_its_dry_run_on_a_worker(celery_worker_factory):
    celery_worker_factory(concurrency=2)
    for i in range(6):
        make_session(
            "app", f"u{i}", f"s{i}", ["My name is Ana", "Deliver to 4 Mill Lane"], idle_days=9
        )
    make_session("app", "u0", "active", ["My name is Ana"], idle_days=0)

    plan = runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=tasks.execute_run.delay)
    plan = wait_until(lambda: finished(plan.id), message="dry-run")
    assert plan.status == RunStatus.DONE and plan.entries.filter(kind="session").count() == 6
    assert AgentSession.objects.count() == 7  # the dry-run changed nothing

    applied = runs.create_run(RunKind.APPLY, plan=plan, enqueue=tasks.execute_run.delay)
    applied = wait_until(lambda: finished(applied.id), message="apply")
    assert applied.status == RunStatus.DONE and applied.done == applied.total == 6
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["active"]
    assert RetiredSession.objects.count() == 6
    assert MemoryRecord.objects.count() == 12
    dupes = MemoryRecord.objects.values("dedupe_key").annotate(n=Count("id")).filter(n__gt=1)
    assert not dupes.exists()


def test_enforcement_fans_out_over_two_worker_processes(celery_worker_factory):
    celery_worker_factory(concurrency=2, MEMADMIN_ENFORCE_BATCH=3)
    update_policy("app", {"max_records": 2})
    from django.utils import timezone

    now = timezone.now()
    for i in range(12):
        make_records("app", f"u{i:02d}", 4, now)
    run = runs.create_run(RunKind.ENFORCE, enqueue=tasks.execute_run.delay)
    run = wait_until(lambda: finished(run.id), message="enforcement")
    assert run.status == RunStatus.DONE and run.done == run.total == 4  # 12 users, batches of 3
    claimed_by = set(run.items.values_list("claim_token", flat=True))
    assert len(claimed_by) == 4
    assert run.stats["users_enforced"] == 12 and run.stats["records_evicted"] == 24
    assert MemoryRecord.objects.count() == 24


def test_duplicate_deliveries_of_one_run_complete_it_once(celery_worker_factory):
    celery_worker_factory(concurrency=2)
    for i in range(3):
        make_session("app", f"u{i}", f"s{i}", ["My name is Ana"], idle_days=9)
    run = runs.create_run(RunKind.SWEEP, enqueue=False)
    for _ in range(5):
        tasks.execute_run.delay(run.id)
    run = wait_until(lambda: finished(run.id), message="sweep")
    assert (run.status, run.attempts, run.total, run.done) == (RunStatus.DONE, 1, 3, 3)
    assert RetiredSession.objects.count() == 3 and MemoryRecord.objects.count() == 3


def test_metrics_rollup_runs_on_the_worker(celery_worker_factory):
    from django.utils import timezone

    from records import feedback

    celery_worker_factory()
    make_records("app", "u1", 3, timezone.now())
    feedback.report_correction("app", "u1", timezone.now(), about="my address")
    tasks.rollup_metrics.delay()
    wait_until(
        lambda: DailyMetric.objects.filter(app_name="app", name="corrections").exists(),
        message="roll-up",
    )
    assert (
        DailyMetric.objects.get(app_name="app", name="records_max", day=timezone.now().date()).value
        == 3
    )


# --- time limits on tasks that run rules --------------------------------------------------

SLOW_PATTERN = r"a.{600}x"  # valid for RE2 and linear, but ~0.3 s per 32,000 characters here


def slow_texts(n):
    import random

    rng = random.Random(5)
    return ["".join(rng.choice("ab") for _ in range(32000)) for _ in range(n)]


def test_an_item_past_its_soft_time_limit_is_released_retried_then_failed(celery_worker_factory):
    from records.models import ImportanceRule

    worker = celery_worker_factory(MEMADMIN_TASK_SOFT_TIME_LIMIT=0.5, MEMADMIN_TASK_TIME_LIMIT=60)
    ImportanceRule.objects.create(app_name="app", name="slow", pattern=SLOW_PATTERN, importance=0.5)
    texts = slow_texts(20)  # seconds of rule work: well past half a second
    make_session("app", "u0", "s0", texts, idle_days=9)

    run = runs.create_run(RunKind.SWEEP, enqueue=tasks.execute_run.delay)
    run = wait_until(lambda: finished(run.id), timeout=120, message="sweep")
    item = run.items.get()
    assert (run.status, item.status) == (RunStatus.FAILED, "failed")
    assert item.outcome == "stopped at the soft time limit (0.5s) 3 times"
    # Every attempt rolled back: the session is still there, nothing half-ingested.
    assert AgentSession.objects.filter(session_id="s0").exists()
    assert not MemoryRecord.objects.exists() and not RetiredSession.objects.exists()
    log = "".join(worker.log)
    released = f"item {item.id} of run {run.id} passed its soft time limit (0.5s); claim released"
    assert log.count(released) == 2
    assert f"item {item.id} of run {run.id} passed its soft time limit (0.5s) 3 times" in log
    assert not any(text[:32] in log for text in texts)  # ids only, never content


def test_a_rescore_past_its_soft_time_limit_is_retried_then_given_up(celery_worker_factory):
    from records.models import ImportanceRule
    from records.tasks import rescore_app

    from ..records.rows import make_record

    worker = celery_worker_factory()
    texts = slow_texts(20)
    for text in texts:
        make_record("app", "u0", content=text, importance=0.2, importance_source="default")
    ImportanceRule.objects.create(app_name="app", name="slow", pattern=SLOW_PATTERN, importance=0.5)

    # The limits travel in the message, from the sender's settings: here, the test's.
    rescore_app.apply_async(("app",), soft_time_limit=0.5, time_limit=60)
    given_up = "re-score of app passed its soft time limit (0.5s) again; given up"
    wait_until(lambda: given_up in "".join(worker.log), timeout=120, message="re-score given up")
    log = "".join(worker.log)
    assert log.count("re-score of app passed its soft time limit (0.5s); retrying") == 2
    assert not any(text[:32] in log for text in texts)
    # The one user's records were in one transaction: all unchanged.
    assert set(MemoryRecord.objects.values_list("importance_rule", flat=True)) == {""}
