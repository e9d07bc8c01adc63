"""The claimed-job engine's common part, on a sweep run's row (any claimed row would do)."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.test import TestCase
from django.utils import timezone

from memadmin import claims
from sweeper.models import Run, RunKind, RunStatus

pytestmark = pytest.mark.django_db


def _run(**fields) -> Run:
    return Run.objects.create(kind=RunKind.SWEEP, as_of=timezone.now(), **fields)


def test_a_write_lands_only_while_the_claim_is_ours():
    run = _run()
    rows = Run.objects.filter(id=run.id)
    free = rows.filter(claim_token="")
    first = claims.claim(free, status=RunStatus.RUNNING)
    assert first is not None
    assert claims.claim(free, status=RunStatus.RUNNING) is None  # one claim wins
    assert claims.heartbeat(rows, first)
    assert claims.fenced_update(rows, first, error="first")

    second = claims.claim(rows)  # taken over
    assert second not in (None, first)
    assert not claims.heartbeat(rows, first)
    assert not claims.fenced_update(rows, first, error="late")
    with transaction.atomic():
        assert claims.fenced_row(rows, first) is None
        assert claims.fenced_row(rows, second).id == run.id
    assert Run.objects.get(id=run.id).error == "first"


def test_a_message_is_due_once_the_last_send_is_older_than_the_cutoff():
    now = timezone.now()
    cutoff = now - timedelta(hours=1)
    never_sent = _run()
    just_sent = _run(queued_at=now)
    sent_long_ago = _run(queued_at=now - timedelta(hours=2))

    due = Run.objects.filter(claims.message_due(cutoff))
    assert set(due.values_list("id", flat=True)) == {never_sent.id, sent_long_ago.id}
    # With ``born``, a row never sent waits until it is older than the cutoff too.
    due_born = Run.objects.filter(claims.message_due(cutoff, born="created_at"))
    assert list(due_born.values_list("id", flat=True)) == [sent_long_ago.id]

    with transaction.atomic():
        taken = claims.take_due(due, now)
    assert taken == sorted([never_sent.id, sent_long_ago.id])
    assert not Run.objects.filter(claims.message_due(cutoff)).exists()
    assert Run.objects.get(id=just_sent.id).queued_at == now


def test_the_reconciler_sends_each_due_row_once_per_lease_after_commit():
    now = timezone.now()
    lost = _run(status=RunStatus.QUEUED, queued_at=now - 2 * claims.lease())
    _run(status=RunStatus.QUEUED, queued_at=now)  # its message may still be queued
    sent = []
    requeue = {"runs": claims.Requeue(Run.objects.filter(status=RunStatus.QUEUED), sent.append)}
    # The test's transaction never commits: run what its commit would.
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert claims.reconcile(requeue, now=now) == {"runs": [lost.id]}
        assert sent == []  # not before the stamp is committed
    assert sent == [lost.id]
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert claims.reconcile(requeue, now=now + claims.lease() / 2) == {"runs": []}
    assert sent == [lost.id]
