"""Staff changes to memory, policies and rules: one way in for the dashboard (and anything else).

Every change to a record runs in a transaction under the user's lock, and writes its
audit entry in that same transaction, so a change without its entry cannot exist. A
record is only found within the app and user the caller names; anything else is
``MemoryRecord.DoesNotExist`` (the pages answer 404).
"""

from __future__ import annotations

import hashlib
import math

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memadmin import audit

from .locks import user_lock
from .models import APP_NAME_MAX, ImportanceRule, ImportanceSource, MemoryRecord, Policy
from .policies import create_policy_row, policy_for, update_policy
from .selectors.apps import check_known_app
from .selectors.rules import rescore_scope
from .store import active_rules
from .tasks import rescore_app

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
    actor,
    app_name: str,
    changes: dict,
    *,
    base_version: int | None = None,
    note: str = "",
    preset: str = "",
) -> Policy:
    """Apply validated policy changes with an audit entry of the values before and after.

    ``preset`` names the preset the changes come from (kept in the audit entry).
    ``base_version`` is the version the staff member reviewed; if someone else changed
    the policy since, StalePolicyError is raised and nothing is saved.
    Raises ValidationError (nothing saved) on bad values, and UnknownApp (a ValueError)
    for an app memadmin has never seen: a new app's policy is made by ``create_policy``.
    """
    check_known_app(app_name)
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
            after={
                "version": policy.version,
                **({"preset": preset} if preset else {}),
                **{f: getattr(policy, f) for f in changed},
            },
            reason=note,
        )
        return policy


APP_NAME_RULE = (
    f"An app name is 1 to {APP_NAME_MAX} characters, without '/', control characters or "
    "spaces at either end (agents use it exactly, in URLs too)."
)


def check_new_app_name(app_name) -> str:
    """The name, or ValidationError saying what an app name may be."""
    if (
        not isinstance(app_name, str)
        or not app_name.strip()
        or app_name != app_name.strip()
        or len(app_name) > APP_NAME_MAX
        or "/" in app_name
        or any(not ch.isprintable() for ch in app_name)
    ):
        raise ValidationError({"app_name": [APP_NAME_RULE]})
    return app_name


def create_policy(actor, app_name: str, *, reason: str = "") -> Policy:
    """Start managing a new app: its first policy, with the defaults, audited.

    Agents' first write creates an app's policy implicitly; this is the explicit way, for
    an app whose agents have not written yet (or one that has data but no policy). Raises
    ValidationError (nothing saved) for a bad name or an app that has a policy already.
    """
    check_new_app_name(app_name)
    reason = (reason or "").strip()
    if len(reason) > audit.REASON_MAX:
        raise ValidationError({"reason": [f"Keep the reason to {audit.REASON_MAX} characters."]})
    existing = Policy.objects.filter(app_name=app_name).values_list("version", flat=True).first()
    if existing is not None:
        raise ValidationError(
            {
                "app_name": [
                    f"{app_name!r} has a policy already (version {existing}); change it on "
                    "its page."
                ]
            }
        )
    staff = actor if actor is not None and actor.is_authenticated else None
    try:
        with transaction.atomic():
            policy = create_policy_row(app_name, by=staff, note=reason or "created")
            audit.record(
                actor,
                audit.POLICY_CREATE,
                app_name=app_name,
                target=f"v{policy.version}",
                after={"version": policy.version, **policy.snapshot()},
                reason=reason,
            )
    except IntegrityError:  # created meanwhile, by an agent's first write or another person
        raise ValidationError(
            {"app_name": [f"{app_name!r} has a policy already; change it on its page."]}
        ) from None
    return policy


# --- importance rules -------------------------------------------------------------------

RULE_FIELDS = ("app_name", "name", "pattern", "action", "importance", "pin", "category", "enabled")


def _pattern_for_audit(pattern: str) -> str:
    """The pattern itself when short; a long one by length and digest (audit values
    are kept short)."""
    if len(pattern) <= audit.MAX_VALUE_CHARS:
        return pattern
    digest = hashlib.sha256(pattern.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{len(pattern)} characters, sha256 {digest}"


def _rule_values(rule: ImportanceRule) -> dict:
    values = {f: getattr(rule, f) for f in RULE_FIELDS}
    values["pattern"] = _pattern_for_audit(rule.pattern)
    return values


def save_rule(actor, rule: ImportanceRule, *, reason: str = "") -> ImportanceRule:
    """Create or change an importance rule, with its audit entry in the same transaction.

    Validates first (``ImportanceRule.clean``: name, action, importance, a pattern that
    compiles); raises ValidationError and saves nothing on bad values. A rule change
    applies to new records; existing ones change only when the app is re-scored.
    """
    rule.full_clean()
    try:
        with transaction.atomic():
            before = None
            if rule.pk is not None:
                current = ImportanceRule.objects.select_for_update().get(pk=rule.pk)
                before = _rule_values(current)
                if before == _rule_values(rule):
                    return current  # nothing changed, nothing to audit
            rule.updated_by = actor if actor is not None and actor.is_authenticated else None
            rule.save()
            audit.record(
                actor,
                audit.RULE_CHANGE,
                app_name=rule.app_name,
                target=rule.name,
                before=before,
                after=_rule_values(rule),
                reason=reason,
            )
    except IntegrityError:  # the same name was saved meanwhile for this app
        raise ValidationError(
            {"name": [f"There is already a rule named {rule.name!r} for this app."]}
        ) from None
    return rule


def request_rescore(actor, app_name: str, *, reason: str = "") -> None:
    """Audit, then (after commit) queue the re-score of every record of the app.

    The task applies the rules current when it runs; staff- and caller-set importance
    is kept and no pin is removed.
    """
    if not isinstance(app_name, str) or not app_name.strip():
        raise ValueError("Re-scoring is per app: name the app.")
    scope = rescore_scope(app_name)
    with transaction.atomic():
        audit.record(
            actor,
            audit.RECORDS_RESCORE,
            app_name=app_name,
            before={"records": scope.records, "kept": scope.kept, "pinned": scope.pinned},
            after={"rules": [r.name for r in active_rules(app_name)]},
            reason=reason,
        )
        transaction.on_commit(lambda: rescore_app.delay(app_name))
