"""Erasure: the compliance path, kept apart from eviction.

Eviction removes records for relevance and may be tuned weekly; erasure removes one
subject's data from every store that holds it (``erasure.inventory``), verifies that
nothing is left, and leaves an audit trail and a receipt. It never writes an
``EvictionEvent``, never counts as an eviction in metrics, and no policy setting
changes what it does.

A request moves submitted → running → completed → verified, or to failed (with the
reason). The job (``run``), started by the Celery task ``erasure.tasks.run_erasure``
with only the request id:

1. **claims** the request with a conditional UPDATE (``claim_token`` NULL → a new token),
   so duplicate deliveries run it once;
2. **raises a barrier** (``records.erasure_guard``): ingests that started before it are
   refused, candidates stamped before it dropped, so nothing read before the erasure
   can bring data back;
3. **deletes** store by store in bounded batches. Each batch is one transaction that
   re-checks the claim, takes the user's lock, deletes at most ``batch_size`` rows and
   adds them to the per-store progress on the request row. A crash loses at most an
   uncommitted batch; the next run skips finished stores and counts stay exact;
4. clears the subject's **Redis** touch-buffer keys;
5. **verifies** by querying every store (and Redis) again: anything left fails the
   request loudly, naming the stores; otherwise it is verified, the receipt is frozen
   and the user id on the request is cleared (the keyed hash stays).

A run that stops heartbeating (worker killed) is handed on by ``reconcile``, which
clears its claim and re-queues it; a run that lost its claim stops at its next batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from memadmin import audit as staff_audit
from memadmin import claims, pseudonyms
from memadmin.log_filters import stored_error
from memadmin.roles import COMPLIANCE, has_role
from records import erasure_guard, touches
from records.ids import validate_id
from records.locks import acquire_user_lock, user_lock_key
from records.models import APP_NAME_MAX, USER_ID_MAX, MemoryRecord
from records.selectors.apps import UnknownApp, is_known_app

from . import models, signing
from .inventory import (
    NO_SUBJECT_DATA,
    SUBJECT_REDIS_FAMILIES,
    SUBJECT_STORES,
    Subject,
    SubjectStore,
)

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]

REDIS_STORE = "redis:touch buffer"
SEARCH_INDEX = "search index"
JOB_ACTOR = "erasure job"
RUN_TASK = "erasure.run_erasure"
# 2: signed with Ed25519 (erasure/signing.py); version 1 receipts carry only a SHA-256.
RECEIPT_VERSION = 2
# What a receipt cannot speak for, printed on every receipt.
NOT_COVERED = (
    "database backups, snapshots and replicas taken before the erasure (they age out "
    "with their retention)",
    "PostgreSQL dead row versions and WAL, and SQLite free pages and WAL, until vacuum or "
    "checkpoint (the job turns on SQLite's secure_delete for its own deletes)",
    "systems outside memadmin: the agents' own logs, LLM providers, analytics, exports",
    "task messages in flight in the broker",
)


class ErasureRefused(ValueError):
    """A submission or action that was refused; nothing was written."""


class LostClaim(Exception):
    """This run no longer holds the request (a reconciler handed it on)."""


def batch_size() -> int:
    return int(settings.MEMADMIN.get("ERASURE_BATCH_SIZE", 1000))


def lease() -> timedelta:
    """A run that has not heartbeated for this long is presumed dead (one lease for
    every claimed job: ``memadmin.claims``)."""
    return claims.lease()


def subject_of(req) -> Subject:
    return Subject(app_name=req.app_name or None, user_id=req.user_id)


def redact(text: str, user_id: str) -> str:
    """Messages we keep (failure reasons, audit) must not carry the user id."""
    return text.replace(user_id, "<subject>") if user_id else text


def audit(
    req,
    action: str,
    *,
    actor: str,
    at: datetime,
    from_status: str = "",
    to_status: str = "",
    detail: dict | None = None,
    task_id: str = "",
):
    return models.ErasureAuditEntry.objects.create(
        request=req,
        at=at,
        actor=actor[:200],
        action=action,
        from_status=from_status,
        to_status=to_status,
        detail=detail or {},
        task_id=task_id or "",
    )


# --- submitting ---------------------------------------------------------------------------


def _check_text(label: str, value: object, limit: int, user_id: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ErasureRefused(f"{label} is required.")
    value = value.strip()
    if len(value) > limit:
        raise ErasureRefused(f"{label} must be at most {limit} characters (got {len(value)}).")
    if len(user_id) >= 3 and user_id.casefold() in value.casefold():
        raise ErasureRefused(
            f"{label} must not contain the user id: it is kept after the erasure. Refer to "
            "the subject through the ticket."
        )
    return value


def submit(
    *,
    app_name: str | None,
    user_id: str,
    user_id_again: str,
    ticket: str,
    reason: str,
    requested_by=None,
    actor: str | None = None,
    now: datetime | None = None,
    enqueue_job: bool = True,
):
    """Create a request (and queue its job once committed). Raises ErasureRefused.

    ``requested_by`` must hold the compliance role; commands pass None and an ``actor``.
    """
    if requested_by is not None and not has_role(requested_by, COMPLIANCE):
        raise ErasureRefused("Only the compliance role can submit an erasure.")
    if app_name is not None and (not isinstance(app_name, str) or not app_name.strip()):
        raise ErasureRefused("Choose an app, or all apps.")
    try:
        # Not check_scope: an app named before app names were refused control characters
        # must still be erasable.
        validate_id("app_name", app_name or "all-apps", APP_NAME_MAX)
        validate_id("user_id", user_id, USER_ID_MAX)
    except ValueError as exc:
        raise ErasureRefused(str(exc)) from exc
    if app_name is not None and len(app_name) > APP_NAME_MAX:
        raise ErasureRefused(f"app_name must be at most {APP_NAME_MAX} characters.")
    if user_id_again != user_id:
        raise ErasureRefused(
            "The user id typed the second time does not match the first; nothing was submitted."
        )
    ticket = _check_text("Ticket", ticket, models.TICKET_MAX, user_id)
    reason = _check_text("Reason", reason, models.REASON_MAX, user_id)
    if app_name is not None and not is_known_app(app_name):
        # A typo would otherwise end "verified", with a receipt, having deleted nothing.
        raise ErasureRefused(str(UnknownApp(app_name)))
    now = now or timezone.now()
    by_name = actor or (requested_by.get_username() if requested_by is not None else "unknown")
    subject = pseudonyms.subject_hash(user_id)
    try:
        with transaction.atomic():
            open_one = _open_request(app_name or "", subject)
            if open_one:
                raise ErasureRefused(
                    f"Erasure #{open_one[0]} of this subject ({app_name or 'all apps'}) is still "
                    f"{open_one[1]}; follow that one instead."
                )
            req = models.ErasureRequest.objects.create(
                app_name=app_name or "",
                user_id=user_id,
                subject_hash=subject,
                ticket=ticket,
                reason=reason,
                requested_by=requested_by,
                requested_by_name=by_name[:150],
                submitted_at=now,
                updated_at=now,
            )
            audit(
                req,
                "submitted",
                actor=by_name,
                at=now,
                to_status=models.ErasureStatus.SUBMITTED,
                detail={"scope": req.scope_label, "ticket": ticket},
            )
            if requested_by is not None:  # a staff action: the staff audit log has it too
                staff_audit.record(
                    requested_by,
                    staff_audit.ERASURE_SUBMIT,
                    app_name=app_name or "",
                    target=f"erasure #{req.pk}",
                    after={"scope": req.scope_label, "ticket": ticket},
                )
            if enqueue_job:
                transaction.on_commit(lambda: enqueue(req.pk))
    except IntegrityError as exc:  # submitted concurrently
        raise ErasureRefused(SUBMITTED_AT_ONCE) from exc
    return req


SUBMITTED_AT_ONCE = (
    "An erasure of this subject and scope was submitted at the same moment; "
    "follow that one instead."
)


def _open_request(app_name: str, subject: str) -> tuple[int, str] | None:
    """(id, status) of the subject's open request in this scope, if any: there is at most
    one (``erasure_one_open_per_subject``)."""
    return (
        models.ErasureRequest.objects.filter(
            app_name=app_name, subject_hash=subject, status__in=models.OPEN_STATUSES
        )
        .values_list("pk", "status")
        .first()
    )


def enqueue(request_id: int) -> None:
    """Record the send and send the job's message. The row is the truth: a lost message
    is re-sent by ``reconcile``; a duplicate one finds the request claimed or finished."""
    models.ErasureRequest.objects.filter(pk=request_id).update(queued_at=timezone.now())
    _send(request_id)


def _send(request_id: int) -> None:
    # By the task's name: the tasks module imports this one, never the other way round.
    current_app.signature(RUN_TASK, args=(request_id,)).delay()


def retry(request_id: int, *, actor: str, now: datetime | None = None, enqueue_job: bool = True):
    """Send a failed request round again: stores are searched again, counts accumulate."""
    now = now or timezone.now()
    try:
        return _retry(request_id, actor=actor, now=now, enqueue_job=enqueue_job)
    except IntegrityError as exc:  # a request of this subject submitted at the same moment
        raise ErasureRefused(SUBMITTED_AT_ONCE) from exc


def _retry(request_id: int, *, actor: str, now: datetime, enqueue_job: bool):
    with transaction.atomic():
        req = models.ErasureRequest.objects.select_for_update().get(pk=request_id)
        if req.status != models.ErasureStatus.FAILED:
            raise ErasureRefused(
                f"Only a failed request can be retried; #{req.pk} is {req.status}."
            )
        open_one = _open_request(req.app_name, req.subject_hash)
        if open_one:  # submitted since this one failed: one open request per subject
            raise ErasureRefused(
                f"Erasure #{open_one[0]} of this subject ({req.scope_label}) is {open_one[1]}; "
                f"follow that one instead of retrying #{req.pk}."
            )
        req.status = models.ErasureStatus.SUBMITTED
        req.progress = {k: {**v, "done": False} for k, v in req.progress.items()}
        req.verification = {}
        req.failure_reason = ""
        req.updated_at = now
        req.save()
        audit(
            req,
            "retried",
            actor=actor,
            at=now,
            from_status=models.ErasureStatus.FAILED,
            to_status=models.ErasureStatus.SUBMITTED,
        )
        if enqueue_job:
            transaction.on_commit(lambda: enqueue(req.pk))
    return req


# --- the job --------------------------------------------------------------------------------


def run(
    request_id: int,
    *,
    task_id: str = "",
    clock: Clock = timezone.now,
    batch: int | None = None,
) -> str:
    """Run (or resume) the job; returns the request's status afterwards, or 'skipped'
    when another run holds it or it is finished. Safe to call any number of times."""
    token = _claim(request_id, clock, task_id)
    if token is None:
        return "skipped"
    job = _Job(request_id, token, task_id, clock, batch or batch_size())
    try:
        with _secure_delete():
            return job.run()
    except LostClaim:
        log.warning("erasure #%s: claim lost to another run; this run stops", request_id)
        return "skipped"
    except Exception as exc:
        log.exception("erasure #%s failed", request_id)
        job.fail(f"{job.step}: {stored_error(exc)}")
        return models.ErasureStatus.FAILED


def _claim(request_id: int, clock: Clock, task_id: str) -> str | None:
    now = clock()
    with transaction.atomic():
        token = claims.claim(
            models.ErasureRequest.objects.filter(
                pk=request_id, status__in=models.OPEN_STATUSES, claim_token__isnull=True
            ),
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
        if token is None:
            return None
        req = models.ErasureRequest.objects.select_for_update().get(pk=request_id)
        if req.status == models.ErasureStatus.SUBMITTED:
            req.status = models.ErasureStatus.RUNNING
            req.started_at = req.started_at or now
            req.save(update_fields=["status", "started_at"])
            audit(
                req,
                "running",
                actor=JOB_ACTOR,
                at=now,
                task_id=task_id,
                from_status=models.ErasureStatus.SUBMITTED,
                to_status=req.status,
                detail={"attempt": req.attempts},
            )
        else:
            audit(
                req,
                "resumed",
                actor=JOB_ACTOR,
                at=now,
                task_id=task_id,
                from_status=req.status,
                to_status=req.status,
                detail={"attempt": req.attempts, "done": _done_stores(req)},
            )
    return token


def _done_stores(req) -> list[str]:
    return [label for label, p in req.progress.items() if p.get("done")]


class _secure_delete:
    """SQLite overwrites the pages our deletes free (PostgreSQL has no such switch)."""

    def __enter__(self):
        self.previous = None
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                self.previous = cursor.execute("PRAGMA secure_delete").fetchone()[0]
                cursor.execute("PRAGMA secure_delete = ON")

    def __exit__(self, *exc):
        if self.previous is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA secure_delete = {int(self.previous)}")


class _Job:
    def __init__(self, request_id, token, task_id, clock, batch):
        self.request_id = request_id
        self.token = token
        self.task_id = task_id
        self.clock = clock
        self.batch = batch
        self.step = "start"
        self.models = models

    # Every write of the job goes through here: the request row locked, the claim checked.
    def _fenced(self):
        req = claims.fenced_row(
            self.models.ErasureRequest.objects.filter(pk=self.request_id), self.token
        )
        if req is None:
            raise LostClaim()
        return req

    def _audit(self, req, action, **kwargs):
        audit(req, action, actor=JOB_ACTOR, at=self.clock(), task_id=self.task_id, **kwargs)

    def run(self) -> str:
        S = self.models.ErasureStatus
        with transaction.atomic():
            status = self._fenced().status
        if status == S.RUNNING:
            self.step = "barrier"
            self.raise_barrier()
            for store in SUBJECT_STORES:
                self.step = store.label
                self.erase_store(store)
            self.step = REDIS_STORE
            self.erase_redis()
            self.step = "completion"
            self.complete()
        self.step = "verification"
        return self.verify()

    def raise_barrier(self) -> None:
        with transaction.atomic():
            req = self._fenced()
            if req.barrier_raised_at is not None:
                return
            # Waits for ingests of this user (any app) that passed the guard to commit;
            # every ingest after this commit sees the barrier.
            erasure_guard.acquire_subject_lock(req.user_id, exclusive=True)
            now = self.clock()
            self.models.ErasureBarrier.objects.create(
                request=req, app_name=req.app_name, subject_hash=req.subject_hash, raised_at=now
            )
            req.barrier_raised_at = now
            req.heartbeat_at = now
            req.save(update_fields=["barrier_raised_at", "heartbeat_at"])
            self._audit(req, "barrier_raised", detail={"raised_at": now.isoformat()})

    def erase_store(self, store: SubjectStore) -> None:
        """Delete the subject's rows of one store, ``self.batch`` at a time."""
        while True:
            with transaction.atomic():
                req = self._fenced()
                state = req.progress.get(store.label, {"deleted": 0, "batches": 0, "done": False})
                if state.get("done"):
                    return
                subject = subject_of(req)
                if subject.app_name is not None:
                    acquire_user_lock(subject.app_name, subject.user_id)
                picked = list(store.rows(subject).values_list("pk", store.app_field)[: self.batch])
                per_model: dict[str, int] = {}
                if picked:
                    if subject.app_name is None:  # lock each app's user, in key order
                        for app in sorted(
                            {a for _, a in picked}, key=lambda a: user_lock_key(a, subject.user_id)
                        ):
                            acquire_user_lock(app, subject.user_id)
                    per_model = store.erase_rows([pk for pk, _ in picked], req.subject_hash)
                    state["batches"] += 1
                else:
                    state["done"] = True
                # Counted in the batch's own transaction: a crash loses both or neither.
                # Cascades (events of a session that gained some meanwhile) count too.
                state["deleted"] += per_model.pop(store.label, 0)
                req.progress[store.label] = state
                for label, n in per_model.items():
                    other = req.progress.setdefault(
                        label, {"deleted": 0, "batches": 0, "done": False}
                    )
                    other["deleted"] += n
                req.heartbeat_at = self.clock()
                req.updated_at = req.heartbeat_at
                req.save(update_fields=["progress", "heartbeat_at", "updated_at"])
                if state["done"]:
                    self._audit(
                        req,
                        "store_done",
                        detail={"store": store.label, "deleted": state["deleted"]},
                    )
                    return

    def erase_redis(self) -> None:
        with transaction.atomic():
            req = self._fenced()
            state = req.progress.get(REDIS_STORE, {"deleted": 0, "batches": 0, "done": False})
            if state.get("done"):
                return
            client = touches.redis_client()
            if client is None:
                state["note"] = "no Redis configured: touches go straight to the database"
            else:
                state["deleted"] += touches.discard_subject_touches(
                    client, subject_of(req).app_name, req.user_id
                )
                state["batches"] += 1
            state["done"] = True
            req.progress[REDIS_STORE] = state
            req.heartbeat_at = self.clock()
            req.save(update_fields=["progress", "heartbeat_at"])
            self._audit(
                req, "store_done", detail={"store": REDIS_STORE, "deleted": state["deleted"]}
            )

    def complete(self) -> None:
        S = self.models.ErasureStatus
        with transaction.atomic():
            req = self._fenced()
            now = self.clock()
            req.status = S.COMPLETED
            req.completed_at = now
            req.heartbeat_at = now
            req.updated_at = now
            req.save(update_fields=["status", "completed_at", "heartbeat_at", "updated_at"])
            self._audit(
                req,
                "completed",
                from_status=S.RUNNING,
                to_status=S.COMPLETED,
                detail={"deleted": {k: v["deleted"] for k, v in req.progress.items()}},
            )

    def verify(self) -> str:
        S = self.models.ErasureStatus
        with transaction.atomic():
            subject = subject_of(self._fenced())
        found = verify_subject(subject)
        left = {label: v["remaining"] for label, v in found.items() if v["remaining"]}
        with transaction.atomic():
            req = self._fenced()
            now = self.clock()
            req.verification = found
            req.claim_token = None
            req.updated_at = now
            if left:
                req.status = S.FAILED
                req.failed_at = now
                req.failure_reason = (
                    "Verification found data left in: "
                    + ", ".join(f"{label} ({n})" for label, n in left.items())
                    + ". Nothing was hidden: retry to erase it and verify again."
                )
                req.save()
                self._audit(
                    req,
                    "failed",
                    from_status=S.COMPLETED,
                    to_status=S.FAILED,
                    detail={"reason": req.failure_reason, "remaining": left},
                )
                return S.FAILED
            req.status = S.VERIFIED
            req.verified_at = now
            req.receipt = signing.sign_receipt(build_receipt(req))
            req.receipt_sha256 = hashlib.sha256(receipt_bytes(req.receipt)).hexdigest()
            req.user_id = ""  # the erasure must not itself keep the data
            req.save()
            self._audit(
                req,
                "verified",
                from_status=S.COMPLETED,
                to_status=S.VERIFIED,
                detail={"receipt_sha256": req.receipt_sha256},
            )
            return S.VERIFIED

    def fail(self, reason: str) -> None:
        S = self.models.ErasureStatus
        try:
            with transaction.atomic():
                req = self._fenced()
                now = self.clock()
                previous = req.status
                req.status = S.FAILED
                req.failed_at = now
                req.updated_at = now
                req.claim_token = None
                req.failure_reason = redact(reason, req.user_id)[:2000]
                req.save()
                self._audit(
                    req,
                    "failed",
                    from_status=previous,
                    to_status=S.FAILED,
                    detail={"reason": req.failure_reason},
                )
        except LostClaim:
            pass


# --- verification -------------------------------------------------------------------------


def verify_subject(subject: Subject) -> dict[str, dict]:
    """Search every subject store (and Redis) for the subject: {store: {remaining, how}}."""
    found: dict[str, dict] = {}
    for store in SUBJECT_STORES:
        found[store.label] = {
            "remaining": store.rows(subject).count(),
            "how": f"rows of {store.label} with this user id"
            + (" in the app" if subject.app_name else " in any app"),
        }
    client = touches.redis_client()
    if client is None:
        found[REDIS_STORE] = {"remaining": 0, "how": "not configured (no Redis)"}
    else:
        keys, members = touches.subject_touch_keys(client, subject.app_name, subject.user_id)
        found[REDIS_STORE] = {
            "remaining": len(keys) + len(members),
            "how": "keys of the touch buffer ("
            + ", ".join(f.name for f in SUBJECT_REDIS_FAMILIES)
            + ") naming this user",
        }
    found[SEARCH_INDEX] = _search_index_check()
    return found


def _search_index_check() -> dict:
    if connection.vendor != "sqlite":
        return {"remaining": 0, "how": "PostgreSQL: the tsvector is a column of the deleted rows"}
    fts = f"{MemoryRecord._meta.db_table}_fts"
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")  # noqa: S608
    except DatabaseError:
        return {"remaining": 1, "how": "SQLite FTS5 integrity-check failed: stale index entries"}
    return {"remaining": 0, "how": "SQLite FTS5 index matches the records table (integrity-check)"}


# --- receipts ------------------------------------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def build_receipt(req) -> dict:
    """What was searched, deleted and verified, for whom (by keyed hash), by which job.

    Holds no user id and no content: keeping it keeps none of the erased data.
    """
    stores = []
    for store in SUBJECT_STORES:
        stores.append(
            {
                "store": store.label,
                "holds": store.what,
                "deleted": req.progress.get(store.label, {}).get("deleted", 0),
                "batches": req.progress.get(store.label, {}).get("batches", 0),
                "remaining_at_verification": req.verification.get(store.label, {}).get("remaining"),
            }
        )
    redis_progress = req.progress.get(REDIS_STORE, {})
    stores.append(
        {
            "store": REDIS_STORE,
            "holds": "; ".join(f"{f.name}: {f.why}" for f in SUBJECT_REDIS_FAMILIES),
            "deleted": redis_progress.get("deleted", 0),
            "batches": redis_progress.get("batches", 0),
            "remaining_at_verification": req.verification.get(REDIS_STORE, {}).get("remaining"),
            **({"note": redis_progress["note"]} if "note" in redis_progress else {}),
        }
    )
    return {
        "receipt": "memadmin erasure receipt",
        "version": RECEIPT_VERSION,
        "request_id": req.pk,
        "job_id": str(req.job_id),
        "ticket": req.ticket,
        "reason": req.reason,
        "requested_by": req.requested_by_name,
        "subject": {
            "scope": "one app" if req.app_name else "all apps",
            "app_name": req.app_name or None,
            "user_id_hmac_sha256": req.subject_hash,
            "hmac_key_id": pseudonyms.hmac_key_id(),
            "note": "HMAC-SHA256 of the user id with a key derived from the server's "
            "SECRET_KEY: the server can check a given user id against it; the receipt "
            "alone does not reveal it.",
        },
        "timeline": {
            "submitted_at": _iso(req.submitted_at),
            "started_at": _iso(req.started_at),
            "barrier_raised_at": _iso(req.barrier_raised_at),
            "completed_at": _iso(req.completed_at),
            "verified_at": _iso(req.verified_at),
        },
        "attempts": req.attempts,
        "stores": stores,
        "verification": {
            "passed": True,
            "checks": req.verification,
        },
        "searched_and_holding_no_subject_data": [
            {"store": e.label, "why": e.why} for e in NO_SUBJECT_DATA
        ],
        "not_covered": list(NOT_COVERED),
    }


def receipt_bytes(receipt: dict) -> bytes:
    return json.dumps(receipt, sort_keys=True, indent=2, ensure_ascii=False).encode()


# --- the reconciler ------------------------------------------------------------------------


def reconcile(now: datetime | None = None, *, stale_after: timedelta | None = None) -> list[int]:
    """Re-queue requests whose run stopped heartbeating (their claim handed on, audited),
    and open ones whose message was lost. Returns their ids. Run periodically (Celery
    beat) and safe to run anywhere: the claimed-job engine's reconciler
    (``claims.reconcile``) sends each at most once per lease, once committed."""
    now = now or timezone.now()
    open_requests = models.ErasureRequest.objects.filter(status__in=models.OPEN_STATUSES)

    def requeued(pk: int, last_heartbeat: datetime) -> None:
        req = models.ErasureRequest.objects.get(pk=pk)
        audit(
            req,
            "requeued",
            actor="reconciler",
            at=now,
            from_status=req.status,
            to_status=req.status,
            detail={"last_heartbeat": last_heartbeat.isoformat()},
        )

    sent = claims.reconcile(
        {
            # Open and unclaimed (a handed-on claim included): no message for a lease
            # means it was lost, or never sent.
            "requests": claims.Requeue(
                open_requests.filter(claim_token__isnull=True), _send, born="submitted_at"
            )
        },
        now=now,
        stale_after=stale_after or lease(),
        stale_claims=claims.HandOn(open_requests, requeued, {"updated_at": now}),
    )
    return sent["requests"]
