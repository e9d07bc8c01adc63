"""The record store: ingest, enforcement, eviction log, search, touches, manual delete."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError

from records import rescore, search, store
from records.extract import Candidate
from records.information import information_importance
from records.models import EvictionEvent, ImportanceRule, MemoryRecord, preset_values
from records.policies import policy_for, update_policy
from records.policy import ARTICLE

from .factories import make_records, session, text_event

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def ingest_texts(texts, *, app="pharmacy", user="u1", sid="s1", now=NOW):
    from records.memory_service import add_session

    return add_session(session(texts, app=app, user=user, id=sid), now)


def test_ingest_stores_fresh_records_as_just_read_under_the_default():
    result = ingest_texts(["Hi", "I am allergic to penicillin", "Deliver to 4 Mill Lane"])
    assert (result.candidates, result.added) == (2, 2)
    records = MemoryRecord.objects.order_by("id")
    assert [r.content for r in records] == ["I am allergic to penicillin", "Deliver to 4 Mill Lane"]
    for r in records:
        assert r.created_at == NOW
        assert r.last_accessed_at == NOW
        assert r.source_session_id == "s1" and len(r.source_event_ids) == 1


def test_ingest_under_the_article_preset_starts_records_one_half_life_old():
    update_policy("pharmacy", preset_values(ARTICLE))
    ingest_texts(["I am allergic to penicillin"])
    [r] = MemoryRecord.objects.all()
    assert r.last_accessed_at == NOW - timedelta(days=30)


def test_a_commitment_is_stored_with_its_due_date_and_decays_after_it():
    said = NOW.timestamp()
    ingest_texts(
        [
            text_event("Your appointment is booked for 12 June", ts=said),
            text_event("I will send the form", ts=said),
            text_event("I am allergic to penicillin", ts=said),
        ]
    )
    booked, promise, allergy = MemoryRecord.objects.order_by("id")
    assert booked.due_at == datetime(2026, 6, 13, tzinfo=UTC)
    assert promise.due_at == NOW  # no date: due when it was said
    assert allergy.due_at is None
    later = NOW + timedelta(days=14)
    [v] = store.select_victims("pharmacy", ["u1"], later, replace_caps(max_records=2))
    assert v.id == promise.id and v.score.importance == pytest.approx(0.375)


def test_a_new_delivery_address_retires_the_old_one_with_its_provenance():
    first = text_event("Please deliver to 4 Mill Lane, Leeds LS1 2AB.", ts=NOW.timestamp())
    ingest_texts([first], sid="s1")
    [old] = MemoryRecord.objects.all()
    search.search("pharmacy", "u1", "delivery address", NOW)  # read, so it scores well
    later = NOW + timedelta(days=40)
    said = later.timestamp()
    ingest_texts(
        [
            text_event("I've moved; my new delivery address is 12 High St, York.", ts=said),
            text_event("Done, I've updated the delivery address on your account.", ts=said),
        ],
        sid="s2",
        now=later,
    )
    new, confirmation = MemoryRecord.objects.order_by("id")
    assert (new.slot, confirmation.slot) == ("delivery-address", None)
    event = EvictionEvent.objects.get()
    assert (event.record_id, event.reason, event.superseded_by) == (old.id, "superseded", new.id)
    assert event.dedupe_key == old.dedupe_key  # re-ingesting s1 does not bring it back
    found = search.search("pharmacy", "u1", "What is my delivery address?", later)
    assert new.id in [r.id for r in found] and old.id not in [r.id for r in found]


def test_a_statement_stamped_ahead_of_its_storing_does_not_outrank_a_newer_one():
    """A clock ahead (or a local time read as UTC) stamped the old address hours after it
    was stored; the new address, said an hour later, must still replace it."""
    old_address = "Please deliver to 4 Mill Lane, Leeds LS1 2AB."
    ahead = text_event(old_address, ts=NOW.timestamp() + 9 * 3600)
    ingest_texts([ahead], sid="s1")
    [old] = MemoryRecord.objects.all()
    assert old.entry_timestamp == NOW  # stored as said by then, not 9 hours on
    later = NOW + timedelta(hours=1)
    new_address = "I've moved; my new delivery address is 12 High St, York."
    ingest_texts([text_event(new_address, ts=later.timestamp())], sid="s2", now=later)
    [kept] = MemoryRecord.objects.all()
    assert kept.content == new_address
    assert EvictionEvent.objects.get().record_id == old.id


def test_under_the_article_preset_the_old_address_stays():
    update_policy("pharmacy", preset_values(ARTICLE))
    ingest_texts([text_event("Please deliver to 4 Mill Lane.", ts=NOW.timestamp())], sid="s1")
    later = NOW + timedelta(days=1)
    ingest_texts(
        [text_event("My new address is 12 High St.", ts=later.timestamp())], sid="s2", now=later
    )
    assert MemoryRecord.objects.count() == 2 and not EvictionEvent.objects.exists()


def test_text_no_rule_matches_scores_by_its_information_under_the_default():
    ingest_texts(["Let me check that for you.", "We are off to Lisbon for the wedding on 14 May"])
    filler, trip = MemoryRecord.objects.order_by("id")
    assert filler.importance < trip.importance < 0.5
    assert (trip.importance_source, trip.importance_rule) == ("default", "information")


def test_under_the_article_preset_unmatched_text_gets_the_flat_importance():
    update_policy("pharmacy", preset_values(ARTICLE))
    ingest_texts(["Let me check that for you.", "We are off to Lisbon for the wedding on 14 May"])
    assert {(r.importance, r.importance_rule) for r in MemoryRecord.objects.all()} == {(0.2, "")}


def replace_caps(**caps):
    from dataclasses import replace

    from records.policies import policy_for

    return replace(policy_for("pharmacy").params(), **caps)


def test_adding_the_same_session_twice_or_with_new_events_never_duplicates():
    s = session(["My name is Ana", "Order #42 is late"])
    from records.memory_service import add_session

    add_session(s, NOW)
    again = add_session(s, NOW)
    assert (again.added, again.duplicates) == (0, 2)
    s.events.append(text_event("I prefer email"))
    more = add_session(s, NOW)
    assert (more.added, more.duplicates) == (1, 2)
    assert MemoryRecord.objects.count() == 3


def test_an_evicted_record_is_not_brought_back_by_reingesting_its_session():
    from records.memory_service import add_session

    update_policy("pharmacy", {"max_records": 1})
    s = session(["What time do you open?", "My name is Ana"])
    first = add_session(s, NOW)
    assert len(first.evicted) == 1
    again = add_session(s, NOW)
    assert (again.added, again.previously_evicted) == (0, 1)
    assert MemoryRecord.objects.count() == 1


def test_enforcement_logs_each_eviction_without_content():
    update_policy("pharmacy", {"max_records": 3})
    make_records("pharmacy", "u1", 5, NOW, importance=0.3, content="secret note {i}")
    victims = store.enforce("pharmacy", "u1", NOW, run_id=77)
    assert len(victims) == 2 and MemoryRecord.objects.count() == 3
    events = list(EvictionEvent.objects.all())
    assert {e.record_id for e in events} == {v.id for v in victims}
    for e in events:
        assert (e.reason, e.policy_version, e.run_id, e.evicted_at) == ("record_cap", 2, 77, NOW)
        w = policy_for("pharmacy").params()
        blend = (
            w.w_recency * e.recency + w.w_frequency * e.frequency + w.w_importance * e.importance
        )
        assert e.score == pytest.approx(blend)
        for field in EvictionEvent._meta.concrete_fields:
            assert "secret note" not in str(getattr(e, field.attname))


def test_enforce_expires_old_records_but_not_pinned_ones():
    make_records("pharmacy", "u1", 2, NOW, age=timedelta(days=400))
    make_records("pharmacy", "u1", 1, NOW, age=timedelta(days=400), pinned=True)
    victims = store.enforce("pharmacy", "u1", NOW)
    assert [v.reason for v in victims] == ["expired", "expired"]
    assert list(MemoryRecord.objects.values_list("pinned", flat=True)) == [True]


def test_other_users_and_apps_are_never_touched_by_enforcement():
    update_policy("pharmacy", {"max_records": 1})
    make_records("pharmacy", "u1", 4, NOW)
    make_records("pharmacy", "u2", 4, NOW)
    make_records("travel", "u1", 4, NOW)
    store.enforce("pharmacy", "u1", NOW)
    assert MemoryRecord.objects.filter(user_id="u2").count() == 4
    assert MemoryRecord.objects.filter(app_name="travel").count() == 4


def test_a_failing_ingest_writes_nothing():
    good = Candidate(
        "k1",
        "s",
        ("e1",),
        "My name is Ana",
        "user",
        None,
        0.9,
        "rule",
        "identity",
        "identity",
        False,
        4,
    )
    bad = Candidate("k2", "s", ("e2",), "bad", "user", None, 1.5, "rule", "x", "x", False, 1)
    with pytest.raises(IntegrityError):
        store.ingest("pharmacy", "u1", [good, bad], NOW)
    assert MemoryRecord.objects.count() == 0


@pytest.mark.parametrize(
    ("app", "user", "message"),
    [
        ("", "u", "app_name must not be empty"),
        ("a", "", "user_id must not be empty"),
        ("a" * 200, "u", "app_name is 200 characters long; at most 128"),
        ("a", "u\x00", "NUL"),
    ],
)
def test_bad_scope_is_refused_with_a_message(app, user, message):
    with pytest.raises(ValueError, match=message):
        store.enforce(app, user, NOW)


def test_search_ranks_by_relevance_and_filters_expired_and_other_users():
    # Separate sessions: a turn right after another also matches that turn's words (its
    # context, see records.search_text), which is not what this test is about.
    for sid, text in enumerate(
        [
            "Please deliver to 12 Elm Street",
            "The delivery to Elm Street was late",
            "What time do you open on Sunday?",
        ]
    ):
        ingest_texts([text], sid=f"s{sid}")
    ingest_texts(["Deliver to 9 Harbour Road"], user="u2")
    old = make_records(
        "pharmacy", "u1", 1, NOW, age=timedelta(days=400), content="Deliver to the old address"
    )[0]
    found = search.search("pharmacy", "u1", "Where should you deliver to Elm Street?", NOW)
    contents = [r.content for r in found]
    assert contents[0] == "Please deliver to 12 Elm Street"
    assert "Deliver to 9 Harbour Road" not in contents  # another user
    assert old.id not in [r.id for r in found]  # expired
    assert "What time do you open on Sunday?" not in contents  # only stopwords in common


def test_search_matches_word_forms_and_handles_empty_or_odd_queries():
    ingest_texts(["I am allergic to penicillin"])
    assert [r.content for r in search.search("pharmacy", "u1", "any allergies?", NOW)] == [
        "I am allergic to penicillin"
    ]
    assert search.search("pharmacy", "u1", "", NOW) == []
    assert search.search("pharmacy", "u1", "!!! ??? \x00", NOW) == []
    assert search.search("pharmacy", "u1", 'penicillin" OR 1=1; --', NOW)[0].content.startswith(
        "I am"
    )


def test_search_returns_at_most_ten():
    ingest_texts([f"Order #{i} placed for metformin" for i in range(25)])
    assert len(search.search("pharmacy", "u1", "metformin order", NOW)) == 10


def test_touch_without_redis_updates_hits_and_access_time_at_once(settings):
    settings.REDIS_URL = ""  # the no-Redis path, under the user's lock, on either database
    [record] = make_records("pharmacy", "u1", 1, NOW)
    assert search.touch("pharmacy", "u1", [record.id], NOW + timedelta(hours=1)) == "applied"
    record.refresh_from_db()
    assert (record.hits, record.last_accessed_at) == (1, NOW + timedelta(hours=1))
    # an older touch never moves the access time backwards
    search.touch("pharmacy", "u1", [record.id], NOW - timedelta(days=3))
    record.refresh_from_db()
    assert (record.hits, record.last_accessed_at) == (2, NOW + timedelta(hours=1))


def test_manual_delete_of_one_or_all_records_is_logged_as_manual():
    records = make_records("pharmacy", "u1", 3, NOW)
    make_records("pharmacy", "u2", 2, NOW)
    assert store.delete_records("pharmacy", "u1", NOW, records[0].id) == 1
    assert store.delete_records("pharmacy", "u1", NOW, records[0].id) == 0  # already gone
    assert store.delete_records("pharmacy", "u1", NOW) == 2
    assert MemoryRecord.objects.filter(user_id="u1").count() == 0
    assert MemoryRecord.objects.filter(user_id="u2").count() == 2  # never everyone's
    assert set(EvictionEvent.objects.values_list("reason", flat=True)) == {"manual"}


def test_staff_rules_apply_to_new_records_only():
    ingest_texts(["The courier left it at the door"], sid="before")
    ImportanceRule.objects.create(
        app_name="pharmacy",
        name="courier",
        pattern=r"\bcourier\b",
        importance=0.7,
        pin=True,
        category="delivery",
    )
    ingest_texts(["The courier left it at the door again"], sid="after")
    before, after = MemoryRecord.objects.order_by("id")
    unmatched = information_importance("The courier left it at the door")
    assert (before.importance, before.pinned) == (unmatched, False)
    assert (after.importance, after.pinned, after.importance_rule) == (0.7, True, "courier")
    # a rule for another app changes nothing here
    ImportanceRule.objects.create(app_name="travel", name="door", pattern="door", importance=1.0)
    assert "door" not in [r.name for r in store.active_rules("pharmacy")]


def test_a_stored_rule_re2_cannot_run_is_skipped_and_ingest_goes_on(caplog):
    # Stored before rules were validated for RE2 (the ORM does not validate).
    ImportanceRule.objects.create(
        app_name="pharmacy", name="backref", pattern=r"(\w+) \1", importance=1.0, pin=True
    )
    ImportanceRule.objects.create(
        app_name="pharmacy", name="courier", pattern=r"\bcourier\b", importance=0.7
    )
    ingest_texts(["the the courier came"])
    record = MemoryRecord.objects.get()
    assert (record.importance_rule, record.importance, record.pinned) == ("courier", 0.7, False)
    assert "backref" not in [r.name for r in store.active_rules("pharmacy")]
    assert "importance rule pharmacy:backref is invalid and was skipped" in caplog.text


def test_rescore_applies_changed_rules_but_keeps_staff_values_and_pins():
    from django.core.management import call_command

    ingest_texts(["The courier left it at the door", "My name is Ana", "I prefer email"])
    staff = MemoryRecord.objects.get(content="I prefer email")
    staff.importance, staff.importance_source = 0.33, "staff"
    staff.save()
    ImportanceRule.objects.create(
        app_name="pharmacy",
        name="courier",
        pattern=r"\bcourier\b",
        importance=0.7,
        pin=True,
        category="delivery",
    )
    ImportanceRule.objects.create(
        app_name="pharmacy", name="identity", pattern="nomatch", importance=0.9, enabled=False
    )
    call_command("rescore", "--app", "pharmacy")
    courier = MemoryRecord.objects.get(content__contains="courier")
    name = MemoryRecord.objects.get(content="My name is Ana")
    staff.refresh_from_db()
    assert (courier.importance, courier.pinned, courier.importance_rule) == (0.7, True, "courier")
    # its rule was disabled: what the text carries
    assert (name.importance, name.importance_source) == (
        information_importance("My name is Ana"),
        "default",
    )
    assert (staff.importance, staff.importance_source) == (0.33, "staff")
    # removing the pinning rule never unpins
    ImportanceRule.objects.filter(name="courier").delete()
    assert rescore.rescore("pharmacy", "u1") == 1
    courier.refresh_from_db()
    assert (courier.importance, courier.pinned) == (information_importance(courier.content), True)
