"""The Policies page's backtest: ops start it, a worker runs it, the page shows it."""

import json
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.test import Client, TestCase

from backtest import runs, service, tasks
from backtest.models import BacktestRun, Status
from records.models import EvictionEvent, MemoryRecord

from .history import APP, T0, make_history

pytestmark = pytest.mark.django_db


def test_the_policy_page_offers_the_backtest_to_ops_only(login):
    make_history(users=("u1",))
    page = login("ops").get(f"/policies/{APP}/").content.decode()
    assert "Backtest a candidate" in page and f"/policies/{APP}/backtest/" in page
    viewer = login("support", username="vic").get(f"/policies/{APP}/").content.decode()
    assert "Backtest a candidate" not in viewer


def test_ops_start_a_backtest_and_its_page_shows_progress_then_the_report(login, monkeypatch):
    make_history(users=("u1", "u2"))
    # The window ends now: move the clock of the replay to the history's end.
    client = login("ops")
    queued = []
    monkeypatch.setattr(tasks.run_backtest, "delay", queued.append)
    monkeypatch.setattr(runs.timezone, "now", lambda: _END)
    with _on_commit_runs():
        response = client.post(
            f"/policies/{APP}/backtest/", {"days": "5", "preset": "article", "values": ""}
        )
    run = BacktestRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/backtests/{run.pk}/"
    assert queued == [run.pk]
    assert run.candidate["w_frequency"] == 0.2 and run.status == Status.QUEUED

    waiting = client.get(f"/backtests/{run.pk}/").content.decode()
    assert "waiting for a worker" in waiting and 'hx-trigger="every 2s"' in waiting

    records_before = MemoryRecord.objects.count()
    monkeypatch.setattr(service, "CHECKED_USERS", 1)  # the exactness check's sample
    assert tasks.run_backtest(run.pk) == Status.DONE
    assert MemoryRecord.objects.count() == records_before
    run.refresh_from_db()
    assert (run.done, run.total) == (2, 2) and run.report["exact"] is True
    assert run.report["totals"]["current"]["evictions"] == EvictionEvent.objects.count()

    page = client.get(f"/backtests/{run.pk}/").content.decode()
    assert "every 2s" not in page
    assert "Replay of the policy that ran (checked on 1 of 2 users): <strong>exact" in page
    embedded = page.split('id="backtest-figure" type="application/json">')[1]
    figure = json.loads(embedded.split("</script>")[0])
    names = {trace["name"] for trace in figure["data"]}
    assert names == {
        "evictions, current",
        "evictions, candidate",
        "regret, current",
        "regret, candidate",
    }


def test_a_run_that_fails_unexpectedly_is_marked_failed_not_left_running(login):
    """A stored candidate this version cannot read (a field since removed): the worker's
    error is raised on, and the run's page says it failed instead of waiting for ever."""
    run = BacktestRun.objects.create(app_name=APP, days=5, candidate={"no_such_field": 1})
    with pytest.raises(TypeError):
        tasks.run_backtest(run.pk)
    run.refresh_from_db()
    assert run.status == Status.FAILED and run.finished_at is not None
    assert run.error.startswith("TypeError: ") and "no_such_field" in run.error
    page = login("ops").get(f"/backtests/{run.pk}/").content.decode()
    assert "every 2s" not in page and "no_such_field" in page


def test_an_invalid_candidate_is_refused_on_the_page_and_nothing_is_queued(login):
    make_history(users=("u1",))
    response = login("ops").post(
        f"/policies/{APP}/backtest/", {"days": "5", "values": "w_recency=0.9"}
    )
    assert response.status_code == 422
    assert "Weights must sum to 1" in response.content.decode()
    assert not BacktestRun.objects.exists()


def test_support_cannot_start_a_backtest_and_posts_need_csrf(login, make_user):
    make_history(users=("u1",))
    assert login("support").post(f"/policies/{APP}/backtest/", {"days": "5"}).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("ops2", "ops"))
    assert strict.post(f"/policies/{APP}/backtest/", {"days": "5"}).status_code == 403
    assert not BacktestRun.objects.exists()


def test_the_run_page_needs_a_login(client):
    assert client.get("/backtests/1/").status_code == 302


_END = T0 + timedelta(days=4)


@contextmanager
def _on_commit_runs():
    """Tests run inside a transaction: run on_commit callbacks as the commit would."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        yield
