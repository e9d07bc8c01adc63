"""Writing the audit log. Every staff change calls ``record`` inside its own transaction,
so the change and its entry commit together or not at all.

Entries hold ids, flags, numbers and policy values; never memory content. ``record``
refuses payloads that look like content, so a careless caller fails loudly in tests
instead of copying user text into a log that can never be deleted.
"""

from __future__ import annotations

from .models import AuditEntry

# Action names, grouped by the thing they change.
RECORD_PIN = "record.pin"
RECORD_UNPIN = "record.unpin"
RECORD_IMPORTANCE = "record.importance"
POLICY_CREATE = "policy.create"
POLICY_UPDATE = "policy.update"
RULE_CHANGE = "rule.change"
RECORDS_RESCORE = "records.rescore"
RUN_START = "run.start"
PLAN_APPLY = "plan.apply"
# The entry names the request, never the subject: the staff log keeps no erased user id.
ERASURE_SUBMIT = "erasure.submit"
ACTIONS = (
    RECORD_PIN,
    RECORD_UNPIN,
    RECORD_IMPORTANCE,
    POLICY_CREATE,
    POLICY_UPDATE,
    RULE_CHANGE,
    RECORDS_RESCORE,
    RUN_START,
    PLAN_APPLY,
    ERASURE_SUBMIT,
)

# Keys under which content would travel (record text, ADK parts, summaries).
CONTENT_KEYS = frozenset({"content", "text", "parts", "data", "summary", "compacted_content"})
# Longest string value allowed in before/after: ids and enum values, not sentences.
MAX_VALUE_CHARS = 256
REASON_MAX = AuditEntry._meta.get_field("reason").max_length


def record(
    actor,
    action: str,
    *,
    app_name: str = "",
    user_id: str = "",
    target: str | int = "",
    before: dict | None = None,
    after: dict | None = None,
    reason: str = "",
) -> AuditEntry:
    """Append one entry. ``actor`` is the staff user (None for the system)."""
    _check_payload("before", before)
    _check_payload("after", after)
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX:
        raise ValueError(f"An audit reason is at most {REASON_MAX} characters.")
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_username=getattr(actor, "username", "") or "system",
        action=action,
        app_name=app_name,
        user_id=user_id,
        target=str(target),
        before=before,
        after=after,
        reason=reason,
    )


def _check_payload(name: str, payload, path: str = "") -> None:
    if payload is None:
        return
    if isinstance(payload, dict):
        for key, value in payload.items():
            if str(key).lower() in CONTENT_KEYS:
                raise ValueError(f"Audit {name} must not hold content (key {path}{key!r}).")
            _check_payload(name, value, f"{path}{key}.")
    elif isinstance(payload, list | tuple):
        for value in payload:
            _check_payload(name, value, path)
    elif isinstance(payload, str):
        if len(payload) > MAX_VALUE_CHARS:
            raise ValueError(
                f"Audit {name} values are ids and settings, not text ({path or 'value'} has "
                f"{len(payload)} characters; at most {MAX_VALUE_CHARS})."
            )
    elif not isinstance(payload, bool | int | float):
        raise ValueError(f"Audit {name} holds plain JSON values only, not {type(payload)!r}.")
