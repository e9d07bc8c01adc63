"""Staff changes to memory and policies: one way in for the dashboard (and anything else).

Every change to a record runs in a transaction under the user's lock, and writes its
audit entry in that same transaction, so a change without its entry cannot exist. A
record is only found within the app and user the caller names; anything else is
``MemoryRecord.DoesNotExist`` (the pages answer 404).
"""

from __future__ import annotations

import math

from django.core.exceptions import ValidationError
from django.db import transaction

from memadmin import audit

from .locks import user_lock
from .models import ImportanceSource, MemoryRecord, Policy
from .policies import policy_for, update_policy

IMPORTANCE_RANGE_MESSAGE = "Importance must be a number from 0 (forgettable) to 1 (essential)."
REASON_REQUIRED_MESSAGE = "Say why the importance changes; the reason goes into the audit log."


class StalePolicyError(Exception):
    """The policy changed after the impact shown to the staff member was computed."""

    def __init__(self, current: Policy):
        super().__init__(f"The policy is now at version {current.version}.")
        self.current = current


def _locked_record(app_name: str, user_id: str, record_id: int) -> MemoryRecord:
    return MemoryRecord.objects.select_for_update().get(
        pk=record_id, app_name=app_name, user_id=user_id
    )


def _set_pinned(actor, app_name, user_id, record_id, pinned: bool, reason: str) -> MemoryRecord:
    with user_lock(app_name, user_id):
        record = _locked_record(app_name, user_id, record_id)
        if record.pinned == pinned:
            return record  # nothing changed, nothing to audit
        record.pinned = pinned
        record.save(update_fields=["pinned"])
        audit.record(
            actor,
            audit.RECORD_PIN if pinned else audit.RECORD_UNPIN,
            app_name=app_name,
            user_id=user_id,
            target=record.pk,
            before={"pinned": not pinned},
            after={"pinned": pinned},
            reason=reason,
        )
        return record


def pin_record(actor, app_name: str, user_id: str, record_id: int, *, reason: str = ""):
    """Pin: the record is never evicted automatically (TTL and caps skip it)."""
    return _set_pinned(actor, app_name, user_id, record_id, True, reason)


def unpin_record(actor, app_name: str, user_id: str, record_id: int, *, reason: str = ""):
    return _set_pinned(actor, app_name, user_id, record_id, False, reason)


def set_importance(
    actor, app_name: str, user_id: str, record_id: int, importance: float, *, reason: str
) -> MemoryRecord:
    """Re-score a record by hand. The reason is required; the source becomes ``staff``."""
    errors = {}
    if not isinstance(importance, int | float) or not math.isfinite(importance):
        errors["importance"] = [IMPORTANCE_RANGE_MESSAGE]
    elif not 0 <= importance <= 1:
        errors["importance"] = [f"{IMPORTANCE_RANGE_MESSAGE} {importance:g} is outside."]
    if not (reason or "").strip():
        errors["reason"] = [REASON_REQUIRED_MESSAGE]
    if errors:
        raise ValidationError(errors)
    with user_lock(app_name, user_id):
        record = _locked_record(app_name, user_id, record_id)
        before = {"importance": record.importance, "importance_source": record.importance_source}
        record.importance = float(importance)
        record.importance_source = ImportanceSource.STAFF
        record.save(update_fields=["importance", "importance_source"])
        audit.record(
            actor,
            audit.RECORD_IMPORTANCE,
            app_name=app_name,
            user_id=user_id,
            target=record.pk,
            before=before,
            after={"importance": record.importance, "importance_source": ImportanceSource.STAFF},
            reason=reason,
        )
        return record


def change_policy(
    actor, app_name: str, changes: dict, *, base_version: int | None = None, note: str = ""
) -> Policy:
    """Apply validated policy changes with an audit entry of the values before and after.

    ``base_version`` is the version the staff member reviewed; if someone else changed
    the policy since, StalePolicyError is raised and nothing is saved.
    Raises ValidationError (nothing saved) on bad values.
    """
    policy_for(app_name)
    with transaction.atomic():
        current = Policy.objects.select_for_update().get(app_name=app_name)
        if base_version is not None and current.version != base_version:
            raise StalePolicyError(current)
        changed = {f: v for f, v in changes.items() if getattr(current, f, object()) != v}
        if not changed:
            return current
        before = {"version": current.version, **{f: getattr(current, f) for f in changed}}
        policy = update_policy(app_name, changed, by=actor, note=note)
        audit.record(
            actor,
            audit.POLICY_UPDATE,
            app_name=app_name,
            target=f"v{policy.version}",
            before=before,
            after={"version": policy.version, **{f: getattr(policy, f) for f in changed}},
            reason=note,
        )
        return policy
