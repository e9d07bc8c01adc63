"""Re-scoring: re-apply the current importance rules to records already stored."""

from __future__ import annotations

from . import rules as pure_rules
from .extract import unmatched_importance
from .ids import check_scope
from .locks import user_lock
from .models import ImportanceSource, MemoryRecord
from .policies import policy_for
from .store import active_rules, due_at_for

# What re-scoring may change on a record.
RESCORED = ("importance", "importance_source", "importance_rule", "category", "pinned", "due_at")


def rescore(app_name: str, user_id: str | None = None) -> int:
    """Re-apply the current rules to existing records; returns how many changed.

    Staff- and caller-set importance is kept, as are cached classifier answers for text
    no rule matches. Rules can add pins but rescoring never removes one: a pin is a
    promise, and only a person takes it back.
    """
    check_scope(app_name, user_id if user_id is not None else "-")
    rules = active_rules(app_name)
    users = (
        [user_id]
        if user_id is not None
        else list(
            MemoryRecord.objects.filter(app_name=app_name)
            .values_list("user_id", flat=True)
            .distinct()
        )
    )
    keep = {ImportanceSource.STAFF, ImportanceSource.CALLER}
    information = policy_for(app_name).information_importance
    changed = 0
    for user in users:
        with user_lock(app_name, user):
            updates = []
            records = MemoryRecord.objects.filter(app_name=app_name, user_id=user).exclude(
                importance_source__in=keep
            )
            for r in records.only("id", "content", "entry_timestamp", "created_at", *RESCORED):
                d = pure_rules.decide(r.content, rules)
                if d.importance is not None:
                    new = (d.importance, ImportanceSource.RULE, d.rule, d.category)
                elif r.importance_source == ImportanceSource.CLASSIFIER:
                    new = (r.importance, r.importance_source, r.importance_rule, d.category)
                else:
                    new = (*unmatched_importance(r.content, information=information), d.category)
                pinned = r.pinned or d.pinned
                old = (r.importance, r.importance_source, r.importance_rule, r.category)
                due_at = r.due_at
                if new[3] != r.category:  # a record becomes, or stops being, a commitment
                    due_at = due_at_for(new[3], r.content, r.entry_timestamp or r.created_at)
                if new != old or pinned != r.pinned or due_at != r.due_at:
                    (r.importance, r.importance_source, r.importance_rule, r.category) = new
                    r.pinned = pinned
                    r.due_at = due_at
                    updates.append(r)
            MemoryRecord.objects.bulk_update(
                updates,
                RESCORED,
                batch_size=500,
            )
            changed += len(updates)
    return changed
