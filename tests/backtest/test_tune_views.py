"""The Policies page's tuning: ops start it, a worker runs it, the page shows the best
three; applying one is the normal policy change (preview, new version, audit entry)."""

import re
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.test import Client, TestCase

from backtest import runs, tasks
from backtest.models import Status, TuneRun
from memadmin.models import AuditEntry
from records.models import MemoryRecord, Policy, PolicyVersion

from .history import APP, T0, make_history

pytestmark = pytest.mark.django_db

_END = T0 + timedelta(days=4)


@contextmanager
def _on_commit_runs():
    """Tests run inside a transaction: run on_commit callbacks as the commit would."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        yield


def _start(client, monkeypatch, days="5"):
    queued = []
    monkeypatch.setattr(tasks.run_tune, "delay", queued.append)
    monkeypatch.setattr(runs.timezone, "now", lambda: _END)
    with _on_commit_runs():
        response = client.post(f"/policies/{APP}/tune/", {"days": days})
    return response, queued


def test_the_policy_page_offers_tuning_to_ops_only(login):
    make_history(users=("u1",))
    page = login("ops").get(f"/policies/{APP}/").content.decode()
    assert "Tune the policy" in page and f"/policies/{APP}/tune/" in page
    viewer = login("support", username="vic").get(f"/policies/{APP}/").content.decode()
    assert "Tune the policy" not in viewer


def test_ops_tune_and_the_page_shows_progress_then_the_best_three(login, monkeypatch):
    make_history(users=("u1", "u2"))
    client = login("ops")
    response, queued = _start(client, monkeypatch)
    run = TuneRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/tunings/{run.pk}/"
    assert queued == [run.pk] and run.status == Status.QUEUED

    waiting = client.get(f"/tunings/{run.pk}/").content.decode()
    assert "waiting for a worker" in waiting and 'hx-trigger="every 2s"' in waiting
    partial = client.get(f"/tunings/{run.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith('<div id="tune-main"')

    before = (MemoryRecord.objects.count(), list(Policy.objects.values()))
    assert tasks.run_tune(run.pk) == Status.DONE
    assert (MemoryRecord.objects.count(), list(Policy.objects.values())) == before
    run.refresh_from_db()
    assert (run.done, run.total) == (2, 2) and run.finished_at is not None
    best = run.result["best"]
    assert 1 <= len(best) <= 3 and run.result["exact"] is True
    current = run.result["current"]
    for c in best:
        assert c["regret_change"] == c["totals"]["regret"] - current["regret"]
        assert c["mean_tokens"] <= current["mean_tokens"]
    # Idempotent: a second delivery of the task leaves the finished run as it is.
    assert tasks.run_tune(run.pk) == Status.DONE
    assert TuneRun.objects.get().result == run.result

    page = client.get(f"/tunings/{run.pk}/").content.decode()
    assert "every 2s" not in page and "Regret" in page and "Nothing was applied" in page
    assert f"1. {best[0]['label']}" in page
    # Each candidate says whether it beats the policy that ran by more than chance: the
    # tuner's own answer (tune.Tuning.beats_current), stored with the run.
    verdicts = [c["beats_current"] for c in best]
    assert all(isinstance(v, bool) for v in verdicts)
    assert page.count("Better than the policy that ran?") == len(best)
    assert page.count("by more than chance") == len(best)
    assert page.count("<strong>Yes</strong>, by more than chance") == verdicts.count(True)


def test_a_tuning_stored_before_the_verdict_shows_no_verdict(login, monkeypatch):
    make_history(users=("u1",))
    client = login("ops")
    _start(client, monkeypatch)
    run = TuneRun.objects.get()
    assert tasks.run_tune(run.pk) == Status.DONE
    run.refresh_from_db()
    for c in run.result["best"]:
        del c["beats_current"]
    run.save(update_fields=["result"])
    page = client.get(f"/tunings/{run.pk}/").content.decode()
    assert "Regret" in page and "Better than the policy that ran?" not in page


def test_the_page_says_how_the_candidates_were_narrowed_old_runs_included(login, monkeypatch):
    make_history(users=("u1",))
    client = login("ops")
    _start(client, monkeypatch)
    run = TuneRun.objects.get()
    assert tasks.run_tune(run.pk) == Status.DONE
    run.refresh_from_db()
    assert (
        run.result["samples"] == []
        and "on a sample" not in client.get(f"/tunings/{run.pk}/").content.decode()
    )
    run.result.update(sampled=300, samples=[[300, 8], [1200, 3]])
    run.save(update_fields=["result"])
    page = client.get(f"/tunings/{run.pk}/").content.decode()
    assert (
        "candidates replayed, ranked on a sample of 300 users; the best 8 on a sample of "
        "1,200; the best 3 on every user." in page
    )
    del run.result["samples"]  # stored before the rounds were kept
    run.save(update_fields=["result"])
    page = client.get(f"/tunings/{run.pk}/").content.decode()
    assert "on a sample of 300 users, the best of them on every user." in page


def _tuned(login, monkeypatch):
    """An ops client, a finished tuning of two users, and its first candidate with
    changes."""
    make_history(users=("u1", "u2"))
    client = login("ops")
    _start(client, monkeypatch)
    run = TuneRun.objects.get()
    tasks.run_tune(run.pk)
    run.refresh_from_db()
    return client, run, next(c for c in run.result["best"] if c["changes"])


def test_apply_goes_through_the_policy_change_preview_then_a_version_and_an_audit(
    login, monkeypatch
):
    client, run, chosen = _tuned(login, monkeypatch)
    page = client.get(f"/tunings/{run.pk}/").content.decode()
    assert f'action="/policies/{APP}/"' in page and 'name="step" value="review"' in page

    # What the apply form posts: the candidate's values, a reason, the review step.
    versions = PolicyVersion.objects.filter(app_name=APP).count()
    data = _apply_form(page)
    assert data == {
        **{k: str(v) for k, v in chosen["values"].items()},
        "preset": "",
        "step": "review",
        "note": f"Tuning #{run.pk}, candidate {run.result['best'].index(chosen) + 1}",
    }
    review = client.post(f"/policies/{APP}/", data)
    text = review.content.decode()
    assert review.status_code == 200 and "Review the change" in text and "across" in text
    assert PolicyVersion.objects.filter(app_name=APP).count() == versions  # nothing saved yet

    base = Policy.objects.get(app_name=APP).version
    data.update(step="confirm", base_version=str(base))
    assert client.post(f"/policies/{APP}/", data).status_code == 302
    saved = Policy.objects.get(app_name=APP)
    assert saved.version == base + 1
    assert PolicyVersion.objects.filter(app_name=APP).count() == versions + 1
    for name, _old, new in chosen["changes"]:
        assert getattr(saved, name) == new
    assert AuditEntry.objects.filter(action__contains="policy").exists()


def _apply_form(page: str) -> dict[str, str]:
    """The fields of the page's first Apply form (the first candidate with changes)."""
    form = page[page.index(f'<form method="post" action="/policies/{APP}/">') :]
    form = form[: form.index("</form>")]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
    fields.pop("csrfmiddlewaretoken", None)
    fields["note"] = re.search(r'name="note"[^>]* value="([^"]*)"', form).group(1)
    return fields


def test_apply_puts_the_tuned_values_on_the_policy_as_it_is_now(login, monkeypatch):
    """A cap changed after the tuning is kept: the form does not send the old one back."""
    client, run, chosen = _tuned(login, monkeypatch)
    tuned = {name for name, _old, _new in chosen["changes"]}
    assert "max_records" not in tuned and "ttl_days" not in tuned
    Policy.objects.filter(app_name=APP).update(max_records=800, ttl_days=30)
    data = _apply_form(client.get(f"/tunings/{run.pk}/").content.decode())
    assert (data["max_records"], data["ttl_days"]) == ("800", "30")
    for name in tuned:
        assert data[name] == str(chosen["values"][name])


def test_support_cannot_tune_and_posts_need_csrf(login, make_user):
    make_history(users=("u1",))
    assert login("support").post(f"/policies/{APP}/tune/", {"days": "5"}).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("ops2", "ops"))
    assert strict.post(f"/policies/{APP}/tune/", {"days": "5"}).status_code == 403
    assert not TuneRun.objects.exists()


def test_support_sees_a_finished_tuning_without_the_apply_button(login, monkeypatch):
    make_history(users=("u1",))
    _start(login("ops"), monkeypatch)
    run = TuneRun.objects.get()
    tasks.run_tune(run.pk)
    page = login("support", username="vic").get(f"/tunings/{run.pk}/").content.decode()
    assert "Regret" in page and 'name="step"' not in page


@pytest.mark.parametrize(
    ("days", "message"),
    [
        ("91", "The access history keeps 90 days"),
        ("0", "greater than or equal to 1"),
        ("many", "Enter a whole number"),
    ],
)
def test_bad_windows_are_refused_with_a_message_and_nothing_is_queued(login, days, message):
    make_history(users=("u1",))
    response = login("ops").post(f"/policies/{APP}/tune/", {"days": days})
    assert response.status_code == 422 and message in response.content.decode()
    assert not TuneRun.objects.exists()


def test_a_window_with_no_history_is_refused(login):
    make_history(users=("u1",))  # in March 2026: nothing in the last day before now
    response = login("ops").post(f"/policies/{APP}/tune/", {"days": "1"})
    assert response.status_code == 422 and "No history for" in response.content.decode()
    assert not TuneRun.objects.exists()


def test_an_unknown_app_is_refused(login):
    response = login("ops").post("/policies/<em>nope/tune/", {"days": "5"})
    assert response.status_code == 404
    text = response.content.decode()
    assert "No policy and no data" in text
    assert "<em>nope" not in text and "&lt;em&gt;nope" in text  # escaped, never marked safe
    assert not TuneRun.objects.exists()


def test_a_tuning_whose_window_lost_its_history_fails_with_the_message(login, monkeypatch):
    make_history(users=("u1",))
    _start(login("ops"), monkeypatch)
    run = TuneRun.objects.get()
    monkeypatch.setattr(runs.timezone, "now", lambda: _END + timedelta(days=30))
    assert tasks.run_tune(run.pk) == Status.FAILED
    run.refresh_from_db()
    assert "No history for" in run.error


def test_the_tuning_page_needs_a_login(client):
    assert client.get("/tunings/1/").status_code == 302
