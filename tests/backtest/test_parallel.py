"""Replaying users on several processes gives the same figures as one process."""

import multiprocessing
import os
from dataclasses import asdict
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from backtest import parallel, service, tune
from records.models import Policy

from .history import APP, make_history

pytestmark = pytest.mark.django_db
# The children read the history on connections of their own: it must be committed.
committed = pytest.mark.django_db(transaction=True)


@committed
def test_two_processes_give_the_same_report_as_one():
    end = make_history(users=("u1", "u2", "u3"))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    one = service.run(APP, 5, candidate, end, workers=1)
    done, children = [], []

    def progress(d, _total):
        done.append(d)
        children.append(len(multiprocessing.active_children()))

    two = service.run(APP, 5, candidate, end, workers=2, progress=progress)
    assert two.as_json() == one.as_json()
    assert two.exactness.exact and done == [1, 2, 3]
    assert children == [2, 2, 2]  # replayed by a pool of two
    assert not multiprocessing.active_children()  # and the pool is gone
    assert one.totals()[1].regret != one.totals()[0].regret  # the candidate differs
    assert Policy.objects.filter(app_name=APP).exists()  # the parent's connection still works


@committed
def test_the_children_read_batches_of_their_own(monkeypatch):
    from backtest import history

    users = ("u1", "u2", "u3", "u4", "u5")
    end = make_history(users=users)
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    one = service.run(APP, 5, candidate, end, workers=1)
    monkeypatch.setattr(history, "USER_BATCH", 2)  # batches of at most 2 users
    assert parallel.batch_size(len(users), 2) == 1
    assert parallel.batch_size(1000, 2) == 2
    done = []
    two = service.run(APP, 5, candidate, end, workers=2, progress=lambda d, t: done.append(d))
    assert two.as_json() == one.as_json()
    assert done == [1, 2, 3, 4, 5]  # a batch of one user each


def _fail(*args, **kwargs):
    raise ValueError("replay failed")


def _die(*args, **kwargs):
    os._exit(3)


@committed
@pytest.mark.parametrize(
    ("replay", "error"),
    [(_fail, pytest.raises(ValueError, match="replay failed")),
     (_die, pytest.raises(service.BacktestError, match="stopped before it finished"))],
)  # fmt: skip
def test_a_child_that_fails_or_dies_ends_the_run_with_its_error(monkeypatch, replay, error):
    end = make_history(users=("u1", "u2", "u3"))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    monkeypatch.setattr(parallel, "replay_histories", replay)  # the children inherit it
    with error:
        service.run(APP, 5, candidate, end, workers=2)
    assert not multiprocessing.active_children()


@committed
def test_the_tuner_on_two_processes_picks_the_same_candidates():
    end = make_history(users=("u1", "u2"))
    one, two = (tune.tune(APP, 5, end, workers=n) for n in (1, 2))
    assert [(c.label, asdict(c.totals)) for c in two.best] == [
        (c.label, asdict(c.totals)) for c in one.best
    ]


def test_inside_a_transaction_the_replay_stays_in_this_process():
    """Rows not yet committed are seen by this connection only: a child would miss them,
    and closing the connection for the fork would roll them back."""
    end = make_history(users=("u1", "u2"))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    assert parallel.usable_workers(2) == 1
    one = service.run(APP, 5, candidate, end, workers=1)
    assert service.run(APP, 5, candidate, end, workers=2).as_json() == one.as_json()
    assert not multiprocessing.active_children()


@committed
def test_with_autocommit_off_the_replay_stays_in_this_process():
    end = make_history(users=("u1",))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    transaction.set_autocommit(False)
    try:
        Policy.objects.filter(app_name=APP).update(max_records=4)  # not committed
        assert parallel.usable_workers(2) == 1
        service.run(APP, 5, candidate, end, workers=2)
        assert Policy.objects.get(app_name=APP).max_records == 4  # not rolled back
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)


def test_batch_sizes_spread_the_users_over_the_processes():
    assert parallel.batch_size(1, 2) == 1
    assert parallel.batch_size(80, 2) == 10  # four batches per process
    assert parallel.batch_size(100_000, 4) == 200  # at most what one read holds


def _report(queue):
    queue.put(parallel.usable_workers(2))


@committed
def test_a_daemonic_process_such_as_a_celery_worker_replays_in_itself():
    assert parallel.usable_workers(2) == 2 and parallel.usable_workers(0) == 1
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_report, args=(queue,), daemon=True)
    child.start()
    assert queue.get(timeout=60) == 1
    child.join(timeout=60)


def test_the_commands_take_workers_and_refuse_a_bad_number():
    end = make_history(users=("u1",))
    out = StringIO()
    until = (end + timedelta(seconds=0)).isoformat()
    args = ("--app", APP, "--days", "5", "--until", until)
    call_command("backtest", *args, "--workers", "2", stdout=out)
    assert "exact" in out.getvalue()
    for bad in ("0", "many", "99"):
        with pytest.raises(CommandError, match="--workers takes a whole number"):
            call_command("tune", *args, "--workers", bad)
