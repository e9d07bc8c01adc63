"""The claimed-job engine's common part: sweep runs and their items (``sweeper.runs``)
and erasure jobs (``erasure.jobs``).

A job is a row. A worker owns it by writing a fresh claim token with one conditional
UPDATE (of five deliveries of one message, one wins), keeps it by renewing its
heartbeat, and writes only through rows filtered on its token (a fenced write: a worker
whose claim was handed on writes nothing). A claim not renewed for one lease is presumed
dead, and that job's reconciler hands it on.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet


def lease() -> timedelta:
    """How long a claim lives without a heartbeat (MEMADMIN_STALE_CLAIM_SECONDS)."""
    return timedelta(seconds=settings.MEMADMIN["STALE_CLAIM_SECONDS"])


def claim(claimable: QuerySet, **fields) -> str | None:
    """Claim the row ``claimable`` selects (the caller's condition for "free to take"),
    setting ``fields`` with the token. The token, or None if another worker has it."""
    token = uuid.uuid4().hex
    return token if claimable.update(claim_token=token, **fields) else None
