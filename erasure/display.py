"""Words for people on the erasure pages: stores by what they hold, audit details as
sentences. Display only: the stored progress, the audit entries and the receipt keep
their machine-readable labels ("records.MemoryRecord"), which tools and verifiers read.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.humanize.templatetags.humanize import intcomma

from . import jobs

# One name per store the job works through, in the words of the dashboard. A test checks
# that every store of the inventory has one, so a store added later cannot show a label.
STORE_NAMES = {
    "records.UserMemoryStats": "per-user totals",
    "records.RecordEmbedding": "vectors of memory records (embeddings)",
    "records.MemoryRecord": "memory records and summaries",
    "records.EvictionEvent": "eviction log",
    "records.RegretTerm": "hashed words of evicted records",
    "records.SearchLog": "access history: searches (ids and hashed words)",
    "records.EvictedRecord": "access history: evicted records (scores and hashed words)",
    "records.Correction": "“I told you before” reports",
    "records.SessionEvent": "session events",
    "records.AgentSession": "sessions",
    "records.RetiredSession": "retired-session tombstones",
    "records.Artifact": "artifacts",
    "records.UserState": "user state",
    "sweeper.PlanEntry": "dry-run report lines",
    "sweeper.WorkItem": "sweeper work items",
    "memadmin.AuditEntry": "staff audit log (pseudonymised, kept)",
    jobs.REDIS_STORE: "touch buffer (Redis)",
    jobs.SEARCH_INDEX: "search index",
}


def store_name(label: str) -> str:
    """The store's name for people; an unknown label is shown as it is, never hidden."""
    return STORE_NAMES.get(label, label)


def _counts(per_store: Mapping[str, int], verb: str) -> str:
    parts = [f"{intcomma(n)} {store_name(label)}" for label, n in per_store.items() if n]
    return f"{verb} " + ", ".join(parts) if parts else f"{verb} nothing"


def describe(action: str, detail: Mapping) -> str:
    """One audit entry's detail as a sentence (the entry's own words for what it holds)."""
    detail = dict(detail or {})
    if action == "completed" and isinstance(detail.get("deleted"), Mapping):
        return _counts(detail["deleted"], "Deleted") + "."
    if action == "store_done" and "store" in detail:
        return f"{store_name(detail['store'])}: {intcomma(detail.get('deleted', 0))} deleted."
    if action == "failed":
        text = str(detail.get("reason", ""))
        if isinstance(detail.get("remaining"), Mapping):
            text = _counts(detail["remaining"], "Left at verification:") + ". " + text
        return text.strip()
    if action == "resumed" and "done" in detail:
        done = ", ".join(store_name(label) for label in detail["done"]) or "none yet"
        return f"Attempt {detail.get('attempt')}; stores already done: {done}."
    if action == "running" and "attempt" in detail:
        return f"Attempt {detail['attempt']}."
    if action == "barrier_raised":
        return "New memories of this subject are refused from now on."
    if action in ("verified", "receipt_downloaded") and "receipt_sha256" in detail:
        return f"Receipt SHA-256 {detail['receipt_sha256']}."
    if action == "requeued" and "last_heartbeat" in detail:
        return f"The job stalled (last heartbeat {detail['last_heartbeat']}); queued again."
    if action == "submitted":
        return "; ".join(f"{k}: {v}" for k, v in detail.items() if v) + ("." if detail else "")
    return "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in detail.items())
