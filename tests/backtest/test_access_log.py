"""The access history: kept without content, erasable, pruned after its retention."""

import json
from datetime import timedelta

import pytest

from records import access_log, feedback, search_text
from records.models import EvictedRecord, EvictionEvent, MemoryRecord, SearchLog

from .history import APP, HOUR, T0, search, write

pytestmark = pytest.mark.django_db


def test_a_search_keeps_its_returned_ids_and_keyed_term_hashes_never_its_text():
    write("u1", "The customer ordered a walnut bookshelf", T0)
    found = search("u1", "walnut bookshelf please", T0 + HOUR)

    row = SearchLog.objects.get()
    assert (row.app_name, row.user_id, row.searched_at) == (APP, "u1", T0 + HOUR)
    assert row.record_ids == [int(e.id) for e in found] and row.record_ids
    words = search_text.query_words("walnut bookshelf please")
    assert row.term_hashes == [feedback.term_hash(w) for w in words]
    stored = json.dumps(list(SearchLog.objects.values()), default=str)
    assert "walnut" not in stored and "bookshelf" not in stored


def test_a_search_keeps_at_most_ten_ids():
    for i in range(14):
        write("u1", f"Note {i} about the garden shed", T0 + i * HOUR)
    search("u1", "garden shed", T0 + 20 * HOUR)
    assert len(SearchLog.objects.get().record_ids) == access_log.KEPT_RESULTS


def test_an_eviction_keeps_what_the_policy_knew_and_no_content():
    from records.models import Policy

    Policy.objects.create(app_name=APP, max_records=1)
    write("u1", "The customer ordered a copper kettle", T0)
    search("u1", "copper kettle", T0 + HOUR)
    first = MemoryRecord.objects.get()
    write("u1", "The customer ordered linen curtains", T0 + 2 * HOUR)

    kept = EvictedRecord.objects.get()
    event = EvictionEvent.objects.get()
    assert kept.record_id == event.record_id == first.id
    assert (kept.created_at, kept.last_accessed_at, kept.hits) == (T0, T0 + HOUR, 1)
    assert (kept.importance, kept.pinned, kept.evicted_at) == (
        first.importance,
        first.pinned,
        T0 + 2 * HOUR,
    )
    assert kept.term_hashes == access_log.record_hashes(first.content)
    assert "kettle" not in json.dumps(list(EvictedRecord.objects.values()), default=str)


def test_prune_drops_history_older_than_the_retention_and_keeps_the_rest(settings):
    settings.MEMADMIN = {**settings.MEMADMIN, "ACCESS_HISTORY_DAYS": 10}
    write("u1", "The customer ordered an oak desk", T0)
    search("u1", "oak desk", T0)
    search("u1", "oak desk", T0 + timedelta(days=5))

    assert access_log.prune(T0 + timedelta(days=10, hours=1)) == 1
    assert list(SearchLog.objects.values_list("searched_at", flat=True)) == [T0 + timedelta(days=5)]


def test_a_failed_history_write_never_fails_the_search(settings, monkeypatch, caplog):
    from records import memory_service, touches

    settings.REDIS_URL = ""  # written directly (with Redis: tests/records/test_touches.py)
    touches.redis_client.cache_clear()
    try:
        write("u1", "The customer ordered a wool blanket", T0)
        monkeypatch.setattr(access_log.SearchLog.objects, "bulk_create", _refuse)
        assert memory_service.search_entries(APP, "u1", "wool blanket", T0 + HOUR)
        assert "search history write failed" in caplog.text
    finally:
        touches.redis_client.cache_clear()


def _refuse(*args, **kwargs):
    raise RuntimeError("database unavailable")


def test_the_prune_task_is_scheduled_daily():
    from memadmin.schedules import SCHEDULES

    tasks = {s["task"]: s for s in SCHEDULES.values()}
    assert "crontab" in tasks["backtest.tasks.prune_access_history"]


@pytest.mark.parametrize("information", [True, False])
def test_an_eviction_keeps_the_information_score_of_a_record_no_rule_decided(information):
    from records.information import information_importance
    from records.models import Policy

    Policy.objects.create(app_name=APP, max_records=1, information_importance=information)
    texts = ["We watched the sunset over Lisbon harbour with Anna", "Later we walked home"]
    write("u1", texts[0], T0)
    first = MemoryRecord.objects.get()
    assert first.importance_source == "default"
    assert first.importance_rule == ("information" if information else "")
    write("u1", texts[1], T0 + HOUR)

    kept = EvictedRecord.objects.get()
    said = texts[0] if kept.record_id == first.id else texts[1]
    assert kept.information == information_importance(said)  # a number, not the text
    assert kept.informed is information


def test_an_eviction_keeps_no_information_score_when_staff_set_the_importance():
    from records.models import Policy

    Policy.objects.create(app_name=APP, max_records=1)
    write("u1", "We watched the sunset over Lisbon harbour with Anna", T0)
    MemoryRecord.objects.update(importance_source="staff", importance=0.01)
    write("u1", "Later we walked home along the river", T0 + HOUR)

    kept = EvictedRecord.objects.get()
    assert (kept.importance, kept.information, kept.informed) == (0.01, None, False)
