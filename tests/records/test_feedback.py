"""Regret hits, corrections and daily counters."""

from datetime import UTC, datetime, timedelta

import pytest
from google.adk.tools.function_tool import FunctionTool

from records import feedback, store, touches
from records.memory_service import add_session, search_entries
from records.models import Correction, DailyCounter, MemoryRecord, RegretTerm
from records.policies import update_policy
from records.tools import report_forgotten_tool

from .factories import make_records, session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def counter(name, app="pharmacy"):
    row = DailyCounter.objects.filter(app_name=app, name=name, day=NOW.date()).first()
    return row.value if row else 0


def evict_opening_hours_note():
    update_policy("pharmacy", {"max_records": 1})
    add_session(session(["The Leeds branch opens at nine on Sundays", "My name is Ana"]), NOW)
    assert not MemoryRecord.objects.filter(content__contains="Sundays").exists()


def test_evicted_records_leave_keyed_term_hashes_never_terms():
    evict_opening_hours_note()
    hashes = list(RegretTerm.objects.values_list("term_hash", flat=True))
    assert feedback.term_hash("sundays") in hashes and feedback.term_hash("leeds") in hashes
    for h in hashes:
        assert h not in {"leeds", "branch", "opens", "nine", "sundays"} and len(h) == 32


def test_a_search_for_an_evicted_record_is_a_regret_hit_once_per_search():
    evict_opening_hours_note()
    search_entries("pharmacy", "u1", "when does the Leeds branch open on Sundays?", NOW)
    search_entries("pharmacy", "u1", "what is my name", NOW)  # unrelated: no hit
    search_entries("pharmacy", "u2", "Leeds branch Sundays", NOW)  # another user: no hit
    touches.flush_touches()  # with Redis the counts are buffered until the touch flush
    assert counter(feedback.REGRET_HITS) == 1
    # every search counts, hit or not: the denominator of regret hits per 1,000 searches
    assert counter(feedback.SEARCHES) == 3
    assert counter(feedback.SEARCHES, "travel") == 0


def test_regret_hashes_expire_after_the_window():
    evict_opening_hours_note()
    later = NOW + feedback.REGRET_WINDOW + timedelta(days=1)
    assert not feedback.is_regret("pharmacy", "u1", ["leeds", "sundays"], later)
    assert feedback.prune_regret_terms(later) > 0
    assert RegretTerm.objects.count() == 0


def test_manual_deletes_are_not_regrettable():
    make_records("pharmacy", "u1", 1, NOW, content="Leeds branch Sundays")
    store.delete_records("pharmacy", "u1", NOW)
    assert RegretTerm.objects.count() == 0


def test_ingested_sessions_are_counted_per_app_and_day():
    add_session(session(["My name is Ana"]), NOW)
    add_session(session(["My name is Ana"], id="s2"), NOW)
    add_session(session(["Hi"], app="travel"), NOW)
    touches.flush_touches()  # with Redis the counts are buffered until the touch flush
    assert counter(feedback.SESSIONS_INGESTED) == 2
    assert counter(feedback.SESSIONS_INGESTED, "travel") == 1


def test_a_correction_records_whether_it_matched_an_eviction_and_keeps_no_text():
    evict_opening_hours_note()
    c1 = feedback.report_correction(
        "pharmacy", "u1", NOW, session_id="s9", about="I told you the Leeds branch hours on Sundays"
    )
    c2 = feedback.report_correction("pharmacy", "u1", NOW, about="my favourite colour")
    assert (c1.matched_eviction, c2.matched_eviction) == (True, False)
    assert counter(feedback.CORRECTIONS) == 2
    text_fields = [f.attname for f in Correction._meta.concrete_fields]
    assert "about" not in text_fields and "note" not in text_fields


def test_report_forgotten_is_an_adk_function_tool():
    assert isinstance(report_forgotten_tool, FunctionTool)
    declaration = report_forgotten_tool._get_declaration()
    assert declaration.name == "report_forgotten"
    properties = declaration.parameters_json_schema["properties"]
    assert "about" in properties and "tool_context" not in properties
