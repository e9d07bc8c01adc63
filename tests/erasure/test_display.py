"""Words for people on the erasure pages; the stored labels stay as they are."""

from erasure import display, jobs
from erasure.inventory import SUBJECT_STORES


def test_every_store_the_job_works_through_has_a_name_for_people():
    labels = [s.label for s in SUBJECT_STORES] + [jobs.REDIS_STORE, jobs.SEARCH_INDEX]
    missing = [label for label in labels if label not in display.STORE_NAMES]
    assert missing == []
    names = [display.store_name(label) for label in labels]
    assert len(set(names)) == len(names)  # no two stores read the same
    assert not any("." in name.split(" ")[0] for name in names)  # no "records.X"
    assert display.store_name("new.Model") == "new.Model"  # unknown: shown, never hidden


def test_audit_details_read_as_sentences():
    deleted = {"records.MemoryRecord": 1200, "records.AgentSession": 3, "records.Artifact": 0}
    assert display.describe("completed", {"deleted": deleted}) == (
        "Deleted 1,200 memory records and summaries, 3 sessions."
    )
    assert display.describe("completed", {"deleted": {}}) == "Deleted nothing."
    assert display.describe("store_done", {"store": "redis:touch buffer", "deleted": 2}) == (
        "touch buffer (Redis): 2 deleted."
    )
    failed = display.describe(
        "failed", {"reason": "Retry to erase it.", "remaining": {"records.UserState": 1}}
    )
    assert failed == "Left at verification: 1 user state. Retry to erase it."
    resumed = display.describe("resumed", {"attempt": 2, "done": ["records.UserMemoryStats"]})
    assert resumed == "Attempt 2; stores already done: per-user totals."
    assert display.describe("verified", {"receipt_sha256": "ab12"}) == "Receipt SHA-256 ab12."
    assert display.describe("other", {"some_key": 1}) == "some key: 1"
