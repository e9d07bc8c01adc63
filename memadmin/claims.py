"""The claimed-job engine's common part: sweep runs and their items (``sweeper.runs``)
and erasure jobs (``erasure.jobs``).

A job is a row. A worker owns it by writing a fresh claim token with one conditional
UPDATE (``claim``: of five deliveries of one message, one wins), keeps it by renewing
its heartbeat (``heartbeat``), and writes only through rows filtered on its token
(``fenced_update``, ``fenced_row``: a worker whose claim was handed on writes nothing).
A claim not renewed for one ``lease`` is presumed dead; a job whose message was lost
(or whose worker died) is sent again at most once per lease by the one reconciler,
``reconcile`` (``message_due``, ``take_due``): in one transaction it hands on the stale
claims it is asked to, stamps the due rows as sent, and sends their messages once that
commits, so a worker never sees a message before the row that makes it claimable.

Each app supplies only what differs: its model and the condition for "free to take",
its conditions for "stalled or lost" (``Requeue``), its task sender, its audit. Who hands
a stale claim on differs by design: a sweep run or item is taken over by the next claim
(its claimable condition accepts a stale one); an erasure job is handed on by the
reconciler (``HandOn``), with the app's audit entry.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

log = logging.getLogger(__name__)

# Sends one job's message, given its id (an app passes its task's ``delay`` or a sender
# by task name in, so this engine never imports the tasks built on it).
Send = Callable[[int], object]


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


@dataclass(frozen=True)
class Requeue:
    """One kind of job row the reconciler sends again. ``stalled``: the app's condition
    for "its worker died or its message was lost"; of those, the rows whose message is
    due (``message_due`` with ``born``) are stamped and sent with ``send``."""

    stalled: QuerySet
    send: Send
    born: str | None = None


@dataclass(frozen=True)
class HandOn:
    """Stale claims the reconciler takes away before it re-sends (erasure jobs; sweep
    runs are taken over by their next claim instead). ``rows``: the open jobs, claimed
    with a nullable token. A row is handed on only if its holder has still not
    heartbeated (a fenced write on token and heartbeat); its message goes with its
    worker, so it is due again at once. ``note(id, last heartbeat)`` runs in the same
    transaction (the app's audit); ``fields`` are written with the hand-on."""

    rows: QuerySet
    note: Callable[[int, datetime], object]
    fields: Mapping[str, object] = field(default_factory=dict)


def hand_on(stale: HandOn, cutoff: datetime) -> list[int]:
    """Take away the claims of ``stale.rows`` not renewed since ``cutoff``; their ids.
    Call inside a transaction."""
    handed = []
    stalled = stale.rows.filter(claim_token__isnull=False, heartbeat_at__lt=cutoff)
    for pk, token, last in list(stalled.values_list("pk", "claim_token", "heartbeat_at")):
        rows = stale.rows.model.objects.filter(pk=pk, heartbeat_at=last)
        if fenced_update(rows, token, claim_token=None, queued_at=None, **stale.fields):
            stale.note(pk, last)
            handed.append(pk)
    return handed


def _send_each(send: Send, ids: list[int]) -> None:
    for pk in ids:
        send(pk)


def reconcile(
    requeue: Mapping[str, Requeue],
    *,
    now: datetime | None = None,
    stale_after: timedelta | None = None,
    stale_claims: HandOn | None = None,
) -> dict[str, list[int]]:
    """The reconciler of every claimed job: hand on ``stale_claims``, then stamp the due
    rows of each ``requeue`` kind as sent now and send them once this commits (inside a
    caller's transaction, once that commits). Returns the re-sent ids by kind.

    Each row is sent at most once per ``stale_after`` (the ``lease``), however often the
    reconciler passes and however long the workers stay down; two reconcilers at once
    send each row once (``take_due`` skips the rows the other has locked)."""
    now = now or timezone.now()
    cutoff = now - (stale_after or lease())
    with transaction.atomic():
        if stale_claims is not None:
            hand_on(stale_claims, cutoff)
        sent = {}
        for kind, rows in requeue.items():
            sent[kind] = take_due(rows.stalled.filter(message_due(cutoff, born=rows.born)), now)
            if sent[kind]:
                transaction.on_commit(partial(_send_each, rows.send, sent[kind]))
    if any(sent.values()):
        log.warning(
            "reconciler re-queued %s", ", ".join(f"{len(ids)} {kind}" for kind, ids in sent.items())
        )
    return sent
