"""The claimed-job engine's common part: sweep runs and their items (``sweeper.runs``)
and erasure jobs (``erasure.jobs``).

A job is a row. A worker owns it by writing a fresh claim token with one conditional
UPDATE (``claim``: of five deliveries of one message, one wins), keeps it by renewing
its heartbeat (``heartbeat``), and writes only through rows filtered on its token
(``fenced_update``, ``fenced_row``: a worker whose claim was handed on writes nothing).
A claim not renewed for one ``lease`` is presumed dead, and that job's reconciler hands
it on; a job whose message was lost is sent again once per lease (``message_due``,
``take_due``).

Each app supplies only what differs: its model and the condition for "free to take",
its task sender, its audit. Who hands a stale claim on differs by design: a sweep run
or item is taken over by the next claim (its claimable condition accepts a stale one);
an erasure job is handed on by its reconciler, with an audit entry.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone


def lease() -> timedelta:
    """How long a claim lives without a heartbeat (MEMADMIN_STALE_CLAIM_SECONDS)."""
    return timedelta(seconds=settings.MEMADMIN["STALE_CLAIM_SECONDS"])


def claim(claimable: QuerySet, **fields) -> str | None:
    """Claim the row ``claimable`` selects (the caller's condition for "free to take"),
    setting ``fields`` with the token. The token, or None if another worker has it."""
    token = uuid.uuid4().hex
    return token if claimable.update(claim_token=token, **fields) else None


def fenced_update(rows: QuerySet, token: str, **fields) -> bool:
    """Update ``rows`` only while they are still claimed with ``token``. False: the
    claim was handed on (or the rows no longer match), and nothing was written."""
    return bool(rows.filter(claim_token=token).update(**fields))


def fenced_row(rows: QuerySet, token: str):
    """The row of ``rows`` locked for this transaction while it is still claimed with
    ``token``, or None: write through it, and the claim is checked for the whole write."""
    return rows.select_for_update().filter(claim_token=token).first()


def heartbeat(rows: QuerySet, token: str, now: datetime | None = None, **fields) -> bool:
    """Renew the claim on ``rows``. False means another worker took it over: stop."""
    return fenced_update(rows, token, heartbeat_at=now or timezone.now(), **fields)


def message_due(cutoff: datetime, *, born: str | None = None) -> Q:
    """No message sent since ``cutoff`` (``queued_at`` records the last send). Until
    then the last one may still be queued: re-sending on every pass would pile up copies
    while the workers are down. With ``born`` (a timestamp field), a row never sent is
    due only once it is older than the cutoff too."""
    never_sent = Q(queued_at__isnull=True, **({f"{born}__lt": cutoff} if born else {}))
    return never_sent | Q(queued_at__lt=cutoff)


def take_due(due: QuerySet, now: datetime) -> list[int]:
    """Stamp the due rows as sent now and return their ids (in a transaction); a second
    reconciler at once skips them (locked)."""
    ids = list(
        due.select_for_update(skip_locked=True, of=("self",))
        .order_by("id")
        .values_list("id", flat=True)
    )
    due.model.objects.filter(id__in=ids).update(queued_at=now)
    return ids
