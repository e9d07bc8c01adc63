"""Duplicate deliveries of the same erasure message: the end state of one delivery."""

import pytest

from erasure.models import ErasureBarrier, ErasureRequest
from erasure.tasks import run_erasure

from .conftest import populate
from .helpers import submit

pytestmark = pytest.mark.django_db(transaction=True)


def snapshot(req: ErasureRequest) -> dict:
    req.refresh_from_db()
    return {
        "status": req.status,
        "user_id": req.user_id,
        "attempts": req.attempts,
        "progress": req.progress,
        "remaining": {k: v["remaining"] for k, v in req.verification.items()},
        "audit": list(req.audit.values_list("action", "from_status", "to_status")),
        "barriers": ErasureBarrier.objects.filter(request=req).count(),
        "receipt_stores": [
            {k: v for k, v in s.items() if k != "store"} for s in req.receipt["stores"]
        ],
    }


def deliver(req):
    return run_erasure.apply(args=[req.pk]).result


def test_the_same_message_delivered_once_twice_and_five_times_at_once(run_in_threads):
    outcomes = {}
    for times, user in ((1, "dup-once"), (2, "dup-twice"), (5, "dup-five")):
        populate("pharmacy", user, f"mk{times}dup")
        req = submit("pharmacy", user)
        if times == 5:
            results = run_in_threads([lambda req=req: deliver(req) for _ in range(times)])
        else:
            results = [deliver(req) for _ in range(times)]
        assert sorted(results) == ["skipped"] * (times - 1) + ["verified"]
        outcomes[times] = snapshot(req)

    assert outcomes[1] == outcomes[2] == outcomes[5]
    actions = [a for a, _, _ in outcomes[5]["audit"]]
    assert actions.count("completed") == 1
    assert actions.count("verified") == 1
    assert outcomes[5]["attempts"] == 1
