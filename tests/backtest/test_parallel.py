"""Replaying users on several processes gives the same figures as one process."""

import multiprocessing
from dataclasses import asdict
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from backtest import parallel, service, tune

from .history import APP, make_history

pytestmark = pytest.mark.django_db


def test_two_processes_give_the_same_report_as_one():
    end = make_history(users=("u1", "u2", "u3"))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    one = service.run(APP, 5, candidate, end, workers=1)
    done = []
    two = service.run(APP, 5, candidate, end, workers=2, progress=lambda d, t: done.append(d))
    assert two.as_json() == one.as_json()
    assert two.exactness.exact and done == [1, 2, 3]
    assert one.totals()[1].regret != one.totals()[0].regret  # the candidate differs


def test_batches_read_while_the_children_replay_give_the_same_report(monkeypatch):
    from backtest import history

    end = make_history(users=("u1", "u2", "u3"))
    candidate = service.candidate_policy(APP, values={"max_records": "3"})
    one = service.run(APP, 5, candidate, end, workers=1)
    monkeypatch.setattr(history, "USER_BATCH", 1)  # three batches, each read during a replay
    done = []
    two = service.run(APP, 5, candidate, end, workers=2, progress=lambda d, t: done.append(d))
    assert two.as_json() == one.as_json() and done == [1, 2, 3]


def test_the_tuner_on_two_processes_picks_the_same_candidates():
    end = make_history(users=("u1", "u2"))
    one, two = (tune.tune(APP, 5, end, workers=n) for n in (1, 2))
    assert [(c.label, asdict(c.totals)) for c in two.best] == [
        (c.label, asdict(c.totals)) for c in one.best
    ]


def _report(queue):
    queue.put(parallel.usable_workers(2))


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
