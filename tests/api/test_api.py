"""The HTTP API: the same behaviour as the in-process ADK services, scoped by key."""

import base64
import json
import time
from urllib.parse import quote, urlencode

import pytest
from django.test import Client
from django.utils import timezone
from google.genai import types

from api import keys
from records import later, memory_service, touches
from records.models import (
    AgentSession,
    Artifact,
    Correction,
    EvictionEvent,
    MemoryRecord,
    SessionEvent,
    UserState,
)

from .conftest import APP, OTHER_APP, USER

pytestmark = pytest.mark.django_db


def event(text, *, id=None, author="user", **fields):
    body = {
        "author": author,
        "invocationId": "inv-1",
        "content": {"role": "user" if author == "user" else "model", "parts": [{"text": text}]},
        **fields,
    }
    if id:
        body["id"] = id
    return body


def new_session(api, session_id="s1", **state):
    response = api.post("sessions", {"sessionId": session_id, "state": state})
    assert response.status_code == 201, response.content
    return response.json()


def append(api, session, ev, **extra):
    return api.post(
        f"sessions/{session['id']}/events",
        {"event": ev, "revision": session["revision"], **extra},
    )


def assert_error(response, status, code, *fragments):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["code"] == code, body
    for fragment in fragments:
        assert fragment in body["detail"], body["detail"]
    return body


# --- authentication and scope --------------------------------------------------------------


def test_missing_or_malformed_key_is_401_with_a_challenge(api):
    for headers in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer "}):
        response = api.client.get(api.url("sessions"), headers=headers)
        assert_error(response, 401, "unauthorized", "Bearer <key>")
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_unknown_key_is_401(api):
    assert_error(api.get("sessions", token="mma_000000000000_nope"), 401, "invalid_key")
    assert_error(api.get("sessions", token="not-a-key"), 401, "invalid_key")


def test_revoked_key_is_401_and_says_revoked(api, api_key):
    assert api.get("sessions").status_code == 200
    keys.revoke_key(api_key.split("_")[1], timezone.now())
    assert_error(api.get("sessions"), 401, "revoked_key", "revoked")
    assert_error(api.post("sessions", {"sessionId": "x"}), 401, "revoked_key")
    assert not AgentSession.objects.exists()


def test_a_key_cannot_read_or_write_another_app(api):
    AgentSession.objects.create(
        app_name=OTHER_APP,
        user_id=USER,
        session_id="theirs",
        created_at=timezone.now(),
        last_update_time=1.0,
    )
    refused = [
        api.get("sessions/theirs", app=OTHER_APP),
        api.get(f"/apps/{OTHER_APP}/sessions"),
        api.post("sessions", {"sessionId": "mine"}, app=OTHER_APP),
        api.post("memory/search", {"query": "anything"}, app=OTHER_APP),
        api.post("memory/entries", {"memories": []}, app=OTHER_APP),
        api.delete("sessions/theirs", app=OTHER_APP),
        api.delete("memory", app=OTHER_APP),
        api.get("artifacts", app=OTHER_APP),
        api.post("corrections", {}, app=OTHER_APP),
    ]
    for response in refused:
        assert_error(response, 403, "wrong_app", APP, OTHER_APP)
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["theirs"]
    assert not Correction.objects.exists()


def test_a_session_body_cannot_smuggle_another_app_or_user(api):
    session = {"id": "s1", "appName": OTHER_APP, "userId": USER, "events": [event("hi there")]}
    assert_error(api.post("memory/sessions", {"session": session}), 422, "invalid_input", "match")
    session.update(appName=APP, userId="someone-else")
    assert_error(api.post("memory/sessions", {"session": session}), 422, "invalid_input", "match")
    assert not MemoryRecord.objects.exists()


def test_the_key_is_checked_before_the_body(api):
    # no key, or a key for another app, learns nothing about its request's body
    assert_error(api.post("sessions", raw="{not json", token=None), 401, "unauthorized")
    assert_error(api.post("sessions", {"bogus": 1}, app=OTHER_APP), 403, "wrong_app")
    assert_error(api.get("sessions", app=OTHER_APP, verbose=1), 403, "wrong_app")


def test_a_staff_login_cookie_does_not_authenticate_the_api(login):
    staff = login("ops", superuser=True)
    response = staff.get(f"/api/v1/apps/{APP}/users/{USER}/sessions")
    assert_error(response, 401, "unauthorized")


def test_api_needs_no_csrf_token_and_sets_no_cookie(api_key, make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("ops-person", "ops"))  # a browser session is present
    response = client.post(
        f"/api/v1/apps/{APP}/users/{USER}/sessions",
        data=json.dumps({"sessionId": "s1"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert response.status_code == 201, response.content
    assert "Set-Cookie" not in response.headers and not response.cookies


def test_answers_no_operation_gives_are_json_and_set_no_cookie(api_key, settings, make_user):
    """A 404 (no such endpoint) and a 405 (ninja's own, before any operation) answer as
    every API error does, and the staff cookie is not refreshed by them either."""
    settings.SESSION_SAVE_EVERY_REQUEST = True
    client = Client()
    client.force_login(make_user("ops-person", "ops"))
    auth = {"Authorization": f"Bearer {api_key}"}
    missing = client.get("/api/v1/nope", headers=auth)
    assert_error(missing, 404, "not_found")
    wrong = client.put(f"/api/v1/apps/{APP}/users/{USER}/sessions", headers=auth)
    assert_error(wrong, 405, "method_not_allowed")
    assert "GET" in wrong.headers["Allow"] and "GET" in wrong.json()["detail"]
    # no user id in either message (the remote client raises it, and agents log errors)
    missing = client.get(f"/api/v1/apps/{APP}/users/{USER}/nope", headers=auth)
    assert USER not in missing.json()["detail"] and USER not in wrong.json()["detail"]
    for response in (missing, wrong):
        assert "Set-Cookie" not in response.headers and not response.cookies


def test_openapi_document_and_docs_are_served_without_login(client):
    doc = client.get("/api/v1/openapi.json")
    assert doc.status_code == 200
    schema = doc.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/apps/{app_name}/users/{user_id}/sessions/{session_id}/events" in schema["paths"]
    assert schema["components"]["securitySchemes"]["AppApiKey"]["scheme"] == "bearer"
    # the request schemas are the ones that validate: unknown fields are refused
    assert schema["components"]["schemas"]["EventIn"]["additionalProperties"] is False
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "https://" not in html  # no CDN assets


# --- sessions ----------------------------------------------------------------------------


def test_create_get_list_and_delete_a_session(api):
    created = new_session(api, "s1", **{"user:name": "Ann", "app:tier": "gold", "k": 1})
    assert created["revision"] == f"{AgentSession.objects.get().id}.0"
    assert created["state"] == {"user:name": "Ann", "app:tier": "gold", "k": 1}
    assert_error(api.post("sessions", {"sessionId": "s1"}), 409, "already_exists", "s1")

    got = api.get("sessions/s1").json()
    assert (got["id"], got["appName"], got["userId"], got["events"]) == ("s1", APP, USER, [])
    assert api.get("state").json() == {"state": {"name": "Ann"}}

    generated = api.post("sessions", {}).json()["id"]
    listed = api.get("sessions").json()["sessions"]
    assert [s["id"] for s in listed] == ["s1", generated]
    assert all(s["events"] == [] for s in listed)
    new_session(api, "s2", user="bob")  # the helper's user kwarg is a state key here
    everyone = api.get(f"/apps/{APP}/sessions").json()["sessions"]
    assert {s["id"] for s in everyone} == {"s1", "s2", generated}

    assert api.delete("sessions/s1").json() == {"deleted": True}
    assert api.delete("sessions/s1").json() == {"deleted": False}
    assert_error(api.get("sessions/s1"), 404, "session_not_found", "s1")


def test_listings_come_a_page_at_a_time_following_next_cursor(api):
    for i in range(5):
        new_session(api, f"s{i}")
    api.post("sessions", {"sessionId": "b0"}, user="bob")
    for path in ("sessions", f"/apps/{APP}/sessions"):
        everything = [s["id"] for s in api.get(path, limit=1000).json()["sessions"]]
        walked, query, pages = [], {"limit": 2}, 0
        while True:
            body = api.get(path, **query).json()
            walked += [s["id"] for s in body["sessions"]]
            pages += 1
            if "nextCursor" not in body:
                break
            query["cursor"] = body["nextCursor"]
        assert walked == everything and len(walked) == (5 if path == "sessions" else 6)
        assert pages == len(walked) // 2 + len(walked) % 2
    assert "nextCursor" not in api.get("sessions").json()  # 5 fit the default page


def test_a_cursor_made_by_hand_is_a_position_and_a_malformed_one_is_422(api):
    new_session(api, "s1")
    # Any cursor of the documented pattern names a position, here one before everything.
    before_all = f"1000~{b'a'.hex()}~ff"
    assert [s["id"] for s in api.get("sessions", cursor=before_all).json()["sessions"]] == ["s1"]
    after_all = "999999999999~61~61"
    assert api.get("sessions", cursor=after_all).json() == {"sessions": []}
    for bad in ("not-a-cursor", "12~6~61", "1.5~~61", "1e5~61~61", "0x1p3~61~61"):
        assert_error(api.get("sessions", cursor=bad), 422, "invalid_request", "cursor")
    for limit in (0, 1001):
        assert_error(api.get("sessions", limit=limit), 422, "invalid_request", "limit")


def test_a_session_an_earlier_stamped_event_moves_back_is_not_skipped_by_paging(api):
    """An agent's clock behind the server's: its event moves lastUpdateTime back, not
    the session's place, so a listing past that time still reaches the session."""
    created = [new_session(api, sid) for sid in ("a", "b", "c")]
    first = api.get("sessions", limit=1).json()
    assert [s["id"] for s in first["sessions"]] == ["a"]
    earlier = first["sessions"][0]["lastUpdateTime"] - 1
    moved = append(api, created[2], event("hi", timestamp=earlier))
    assert moved.status_code == 200, moved.content
    assert api.get("sessions/c").json()["lastUpdateTime"] == earlier  # ADK's value
    seen, cursor = ["a"], first["nextCursor"]
    while cursor:
        page = api.get("sessions", limit=1, cursor=cursor).json()
        seen += [s["id"] for s in page["sessions"]]
        cursor = page.get("nextCursor")
    assert seen == ["a", "b", "c"]


@pytest.mark.parametrize("stored", [1796414479265.0, -1.0, 1e16, 1.5e-05, 0.0])
def test_a_cursor_the_server_made_is_always_accepted_whatever_time_was_stored(api, stored):
    """Times stored before today's timestamp rule (milliseconds, negative) are places
    too: the cursor after them must be one the server takes back."""
    for sid in ("old", "new"):
        new_session(api, sid)
    AgentSession.objects.filter(session_id="old").update(listed_at=stored, last_update_time=stored)
    AgentSession.objects.filter(session_id="new").update(listed_at=float("inf"))
    first = api.get("sessions", limit=1).json()
    assert [s["id"] for s in first["sessions"]] == ["old"]
    second = api.get("sessions", limit=1, cursor=first["nextCursor"])
    assert second.status_code == 200, second.content
    assert [s["id"] for s in second.json()["sessions"]] == ["new"]


def test_append_event_stores_it_applies_state_and_bumps_the_revision(api):
    session = new_session(api)
    ev = event(
        "Please deliver to 4 Mill Lane",
        actions={"stateDelta": {"user:city": "Leeds", "temp:scratch": 1, "step": 2}},
    )
    response = append(api, session, ev)
    assert response.status_code == 200, response.content
    body = response.json()
    row_id = AgentSession.objects.get().id
    assert body["stored"] is True and body["revision"] == f"{row_id}.1"
    assert body["event"]["actions"]["stateDelta"] == {"user:city": "Leeds", "step": 2}
    got = api.get("sessions/s1").json()
    assert got["revision"] == f"{row_id}.1" and got["lastUpdateTime"] == body["lastUpdateTime"]
    assert [e["content"]["parts"][0]["text"] for e in got["events"]] == [
        "Please deliver to 4 Mill Lane"
    ]
    assert got["state"] == {"step": 2, "user:city": "Leeds"}  # temp: is never stored
    assert UserState.objects.get(app_name=APP, user_id=USER).state == {"city": "Leeds"}


def test_a_session_id_is_trimmed_in_every_session_route(api):
    session = new_session(api, " g ")
    assert session["id"] == "g"
    assert api.get("sessions/%20g%20").json()["id"] == "g"
    assert append(api, {**session, "id": "%20g%20"}, event("hi")).status_code == 200
    assert api.delete("sessions/%20g%20").json() == {"deleted": True}


def test_appending_from_an_old_revision_is_409_stale_and_stores_nothing(api):
    session = new_session(api)
    assert append(api, session, event("first")).status_code == 200
    response = append(api, session, event("from a stale copy"))  # still revision 0
    assert_error(response, 409, "stale_session", "get_session")
    assert SessionEvent.objects.count() == 1


def test_a_retried_append_is_stored_once_and_catches_the_revision_up(api):
    session = new_session(api)
    ev = event("I am allergic to penicillin", id="ev-1", timestamp=1_700_000_000.5)
    first = append(api, session, ev).json()
    # the answer was lost: the client retries with the revision it still holds
    retry = append(api, session, ev)
    assert retry.status_code == 200
    body = retry.json()
    assert body["stored"] is False
    assert (body["revision"], body["lastUpdateTime"]) == (first["revision"], 1_700_000_000.5)
    assert SessionEvent.objects.count() == 1
    # once another event followed, a re-delivery from the old revision is not caught up
    assert append(api, {**session, "revision": first["revision"]}, event("next")).status_code == 200
    late = append(api, session, ev).json()
    assert late["stored"] is False and "revision" not in late
    assert SessionEvent.objects.count() == 2


@pytest.mark.parametrize(
    "fields",
    [
        # temp: keys are never stored: the re-delivery still matches the stored event
        {"actions": {"stateDelta": {"temp:x": 1, "k": 2}}},
        # PostgreSQL's jsonb gives 1e+23 back as an integer: still the same number
        {"customMetadata": {"score": 1e23, "small": 1e-7, "big": 10**23}},
    ],
)
def test_a_retried_append_matches_the_stored_event_by_its_stored_form(api, fields):
    session = new_session(api)
    ev = event("hello", id="ev-1", timestamp=1_700_000_000.5, **fields)
    assert append(api, session, ev).json()["stored"] is True
    retry = append(api, session, ev)  # the answer was lost
    assert retry.status_code == 200, retry.content
    assert retry.json()["stored"] is False
    assert SessionEvent.objects.count() == 1
    # a different number is a different event: not taken for a re-delivery
    if "customMetadata" in fields:
        other = {**ev, "customMetadata": {**fields["customMetadata"], "big": 10**23 + 1}}
        assert_error(append(api, session, other), 409, "stale_session")


def test_unstorable_characters_in_event_columns_are_replaced_alike_on_both_databases(api):
    session = new_session(api)
    ev = event("hi", id="e\x001", author="x\x00y", invocationId="inv\x00")
    response = append(api, session, ev)
    assert response.status_code == 200, response.content
    row = SessionEvent.objects.get()
    assert (row.event_id, row.author, row.invocation_id) == ("e\ufffd1", "x\ufffdy", "inv\ufffd")
    assert (row.data["id"], row.data["author"]) == ("e\ufffd1", "x\ufffdy")
    got = api.get("sessions/s1").json()["events"][0]
    assert (got["id"], got["author"]) == ("e\ufffd1", "x\ufffdy")


def test_a_retry_is_caught_up_only_if_the_write_since_was_its_own(api):
    """A session may hold a different event that shares an id: a retry of the first,
    from the revision before the other was stored, is not told it is caught up."""
    session = new_session(api)
    first = event("My blood type is O negative", id="e1", timestamp=1_700_000_000.5)
    at_one = append(api, session, first).json()
    other = event("My insurance number is 12345", id="e1", timestamp=1_700_000_001.5)
    assert append(api, {**session, "revision": at_one["revision"]}, other).json()["stored"]
    late = append(api, {**session, "revision": at_one["revision"]}, first)
    assert late.status_code == 200
    assert late.json()["stored"] is False and "revision" not in late.json()
    assert SessionEvent.objects.count() == 2


def test_a_session_object_without_a_revision_is_judged_by_its_last_event(api):
    session = new_session(api)
    stored = append(api, session, event("one", id="e1")).json()
    base = {"lastUpdateTime": stored["lastUpdateTime"], "lastEventId": "e1"}
    url = "sessions/s1/events"
    ok = api.post(url, {"event": event("two", id="e2"), **base})
    assert ok.status_code == 200 and ok.json()["stored"] is True
    # a hand-made object that does not end with the stored last event is stale
    assert_error(api.post(url, {"event": event("three"), **base}), 409, "stale_session")


def test_append_errors(api):
    missing = api.post("sessions/nope/events", {"event": event("hi"), "revision": "0"})
    assert_error(missing, 404, "session_not_found", "nope")
    new_session(api)
    partial = api.post("sessions/s1/events", {"event": event("hal", partial=True)})
    assert_error(partial, 422, "invalid_input", "Partial")
    unknown = api.post("sessions/s1/events", {"event": {**event("hi"), "colour": "red"}})
    body = assert_error(unknown, 422, "invalid_request", "body.event.colour")
    assert body["errors"][0]["loc"] == ["body", "event", "colour"]
    assert SessionEvent.objects.count() == 0


@pytest.mark.parametrize(
    ("stamp", "fragment"),
    [
        (1796266895557, "looks like milliseconds since the epoch; send seconds (1796266895.557)"),
        (1e308, "out of range"),
        (253402300800, "out of range"),
        (-62135596801, "out of range"),
        (time.time() + 365 * 86400, "out of range"),  # would keep the session active a year
    ],
)
def test_events_stamped_outside_the_range_are_refused_naming_it(api, stamp, fragment):
    session = new_session(api)
    allowed = "seconds since the epoch from 946684800 (2000-01-01) to"
    refused = append(api, session, event("hi", timestamp=stamp))
    assert_error(refused, 422, "invalid_input", "event timestamp", fragment, allowed)
    for path, body in [
        ("memory/events", {"events": [event("My name is Ana", timestamp=stamp)]}),
        ("memory/sessions", {"session": {**session, "events": [event("Ana", timestamp=stamp)]}}),
    ]:
        refused = api.post(path, body)
        assert_error(refused, 422, "invalid_input", "events[0].timestamp", fragment, allowed)
    assert not SessionEvent.objects.exists() and not MemoryRecord.objects.exists()
    assert AgentSession.objects.get().last_update_time == session["lastUpdateTime"]


def test_get_session_filters_events_as_adk_does(api):
    session = new_session(api)
    t0 = time.time() - 1000
    for i, ts in enumerate([10.0, 20.0, 30.0, 40.0]):
        response = append(api, session, event(f"e{i}", id=f"e{i}", timestamp=t0 + ts))
        session["revision"] = response.json()["revision"]

    def ids(**query):
        response = api.get("sessions/s1", **query)
        assert response.status_code == 200, response.content
        return [e["id"] for e in response.json()["events"]]

    assert ids() == ["e0", "e1", "e2", "e3"]
    assert ids(num_recent_events=2) == ["e2", "e3"]
    assert ids(num_recent_events=0) == []
    assert ids(after_timestamp=t0 + 25.0) == ["e2", "e3"]
    assert ids(num_recent_events=3, after_timestamp=t0 + 35.0) == ["e3"]
    assert_error(api.get("sessions/s1", num_recent_events=-1), 422, "invalid_request")


def test_invalid_ids_are_refused_with_the_domains_message(api):
    too_long = "u" * 257
    response = api.post("sessions", {"sessionId": "s1"}, user=too_long)
    assert response.status_code == 422
    assert "user_id" in response.json()["detail"]
    assert_error(api.post("sessions", {"sessionId": " "}), 422, "invalid_input", "blank")
    # a length the document states is refused by it
    too_long = api.post("sessions", {"sessionId": "x" * 257})
    assert_error(too_long, 422, "invalid_request", "body.sessionId", "too long")
    assert not AgentSession.objects.exists()


# --- memory ------------------------------------------------------------------------------


def ingest(api, session_id="visit-1", texts=("I am allergic to penicillin",)):
    session = {
        "id": session_id,
        "appName": APP,
        "userId": USER,
        "events": [event(t, id=f"{session_id}-{i}") for i, t in enumerate(texts)],
    }
    response = api.post("memory/sessions", {"session": session})
    assert response.status_code == 200, response.content
    return response.json()


def test_ingest_a_session_is_idempotent(api):
    texts = ["Thanks!", "I am allergic to penicillin", "Deliver to 4 Mill Lane, Leeds"]
    first = ingest(api, texts=texts)
    assert first == {
        "candidates": 2,  # small talk is dropped before it is a candidate
        "added": 2,
        "duplicates": 0,
        "previouslyEvicted": 0,
        "refreshed": 0,
        "evicted": 0,
    }
    assert ingest(api, texts=texts)["duplicates"] == 2
    assert MemoryRecord.objects.filter(app_name=APP, user_id=USER).count() == 2
    assert MemoryRecord.objects.get(pinned=True).source_session_id == "visit-1"


def test_a_session_read_from_the_api_can_be_ingested(api):
    session = new_session(api)
    append(api, session, event("My date of birth is 1 May 1980"))
    read = api.get("sessions/s1").json()
    assert api.post("memory/sessions", {"session": read}).json()["added"] == 1


def test_add_events_and_memories(api):
    response = api.post(
        "memory/events", {"events": [event("I prefer morning deliveries")], "sessionId": "s9"}
    )
    assert response.json()["added"] == 1
    assert MemoryRecord.objects.get().source_session_id == "s9"
    entry = {"id": "m1", "content": {"role": "user", "parts": [{"text": "Likes jazz"}]}}
    response = api.post(
        "memory/entries",
        {"memories": [entry], "customMetadata": {"importance": 0.7, "pinned": True}},
    )
    assert response.json()["added"] == 1
    record = MemoryRecord.objects.get(content="Likes jazz")
    assert (record.importance, record.pinned, record.importance_source) == (0.7, True, "caller")


def test_bad_memory_metadata_is_422_and_writes_nothing(api):
    entry = {"id": "m1", "content": {"role": "user", "parts": [{"text": "Likes jazz"}]}}
    response = api.post(
        "memory/entries", {"memories": [entry], "customMetadata": {"importance": 3}}
    )
    assert_error(response, 422, "invalid_input", "importance", "0..1")
    unknown = api.post("memory/entries", {"memories": [{**entry, "mood": "good"}]})
    assert_error(unknown, 422, "invalid_request", "body.memories.0.mood")
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_an_entry_stamped_past_what_utc_can_hold_is_stored_undated(api, stamp):
    """Year 1 at +05:00 is before year 1 in UTC: no database holds it; it was a 500 on
    SQLite and, on PostgreSQL, a stored stamp that failed every later search."""
    entry = {"content": {"role": "user", "parts": [{"text": "My favourite colour is teal"}]}}
    response = api.post("memory/entries", {"memories": [{**entry, "timestamp": stamp}]})
    assert response.status_code == 200, response.content
    assert MemoryRecord.objects.get().entry_timestamp is None
    found = api.post("memory/search", {"query": "favourite colour"})
    assert found.status_code == 200, found.content
    assert [m["content"]["parts"][0]["text"] for m in found.json()["memories"]] == [
        "My favourite colour is teal"
    ]


def test_search_ranks_as_in_process_and_touches_the_hits(api):
    ingest(
        api,
        texts=[  # the address first: a turn after a match is found through its context
            "Deliver to 4 Mill Lane",
            "I am allergic to penicillin",
            "My penicillin allergy gives me a rash, penicillin is dangerous",
        ],
    )
    response = api.post("memory/search", {"query": "penicillin allergy"})
    assert response.status_code == 200
    found = response.json()["memories"]
    in_process = memory_service.search_entries(APP, USER, "penicillin allergy", timezone.now())
    assert [m["id"] for m in found] == [m.id for m in in_process]
    assert len(found) == 2
    first = found[0]
    assert first["custom_metadata"]["source_session_id"] == "visit-1"
    assert first["content"]["parts"][0]["text"] in {r.content for r in MemoryRecord.objects.all()}
    later.drain()  # the searches' touches are written after the answer
    touches.flush_touches()
    assert MemoryRecord.objects.get(id=int(first["id"])).hits == 2  # two searches
    assert api.post("memory/search", {"query": "  "}).json() == {"memories": []}


def test_search_answers_each_memory_with_the_role_it_was_stored_with(api):
    """As in process: an entry's or event's content role, whoever its author."""
    ingest(api, texts=["I am allergic to penicillin"])
    relayed = event("I prefer jazz music", id="e-jazz", author="pharmacy_agent")
    relayed["content"]["role"] = "user"
    assert api.post("memory/events", {"events": [relayed]}).status_code == 200
    entry = {"content": {"role": "user", "parts": [{"text": "Deliver to 4 Mill Lane"}]}}
    assert api.post("memory/entries", {"memories": [entry]}).status_code == 200

    found = api.post("memory/search", {"query": "penicillin jazz mill"}).json()["memories"]

    roles = {
        m["content"]["parts"][0]["text"]: (m.get("author"), m["content"]["role"]) for m in found
    }
    assert roles == {
        "I am allergic to penicillin": ("user", "user"),
        "I prefer jazz music": ("pharmacy_agent", "user"),
        "Deliver to 4 Mill Lane": (None, "user"),
    }
    in_process = memory_service.search_entries(APP, USER, "penicillin jazz mill", timezone.now())
    assert [m["content"] for m in found] == [
        m.content.model_dump(mode="json", by_alias=True, exclude_none=True) for m in in_process
    ]
    later.drain()  # the searches' touches are written after the answer
    touches.flush_touches()  # with Redis the search hits land now, not in a later test


def test_saving_what_search_returned_refreshes_instead_of_copying(api):
    texts = ["I am allergic to penicillin", "Deliver to 4 Mill Lane", "I like jazz music"]
    ingest(api, texts=texts)
    found = api.post("memory/search", {"query": "penicillin mill jazz"}).json()["memories"]
    assert len(found) == 3
    later.drain()  # the searches' touches are written after the answer
    touches.flush_touches()  # with Redis the search hits land now, not in a later test

    saved = api.post("memory/entries", {"memories": found})

    assert saved.status_code == 200, saved.content
    assert saved.json() == {
        "candidates": 3,
        "added": 0,
        "duplicates": 0,
        "previouslyEvicted": 0,
        "refreshed": 3,
        "evicted": 0,
    }
    assert MemoryRecord.objects.filter(app_name=APP, user_id=USER).count() == 3
    # another user saving those entries gets memories of their own; ours are untouched
    hits = dict(MemoryRecord.objects.values_list("id", "hits"))
    other = api.post("memory/entries", {"memories": found}, user="cust-0043").json()
    assert (other["added"], other["refreshed"]) == (3, 0)
    assert dict(MemoryRecord.objects.filter(user_id=USER).values_list("id", "hits")) == hits


def test_delete_one_memory_or_all(api):
    ingest(api, texts=["I am allergic to penicillin", "Deliver to 4 Mill Lane", "I like jazz"])
    record = MemoryRecord.objects.get(content="I like jazz")
    assert api.delete(f"memory/{record.id}").json() == {"deleted": 1}
    assert api.delete(f"memory/{record.id}").json() == {"deleted": 0}
    assert EvictionEvent.objects.get().reason == "manual"
    # only ids as search writes them: pydantic alone read "05" and "5_0" as 5 and 50
    for odd in ("jazz", f"0{record.id}", f"{record.id}_0", f"+{record.id}", "%20" + str(record.id)):
        assert_error(api.delete(f"memory/{odd}"), 422, "invalid_request", "a record id as")
    assert api.delete("memory").json() == {"deleted": 2}
    assert not MemoryRecord.objects.exists()


# --- artifacts ---------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


def test_artifacts_round_trip_bytes_and_versions(api):
    data = bytes(range(256))
    part = {"inlineData": {"data": b64(data), "mimeType": "application/octet-stream"}}
    saved = api.post("artifacts", {"filename": "user:scan.bin", "artifact": part})
    assert saved.status_code == 201 and saved.json() == {"version": 0}
    saved = api.post(
        "artifacts",
        {"filename": "user:scan.bin", "artifact": {"text": "v1"}, "customMetadata": {"a": 1}},
    )
    assert saved.json() == {"version": 1}

    v0 = types.Part.model_validate(api.get("artifacts/user:scan.bin", version=0).json())
    assert v0.inline_data.data == data
    assert api.get("artifacts/user:scan.bin").json() == {"text": "v1"}
    versions = api.get("artifact-versions/user:scan.bin").json()["versions"]
    assert [v["version"] for v in versions] == [0, 1]
    assert versions[1]["customMetadata"] == {"a": 1} and versions[1]["mimeType"] == "text/plain"
    assert versions[0]["canonicalUri"].endswith("/artifacts/user:scan.bin/versions/0")

    assert api.delete("artifacts/user:scan.bin").json() == {"deleted": 2}
    assert_error(api.get("artifacts/user:scan.bin"), 404, "artifact_not_found")
    assert api.get("artifact-versions/user:scan.bin").json() == {"versions": []}


def test_session_scoped_artifacts_need_a_session_and_filenames_may_have_slashes(api):
    part = {"text": "report"}
    refused = api.post("artifacts", {"filename": "reports/may.txt", "artifact": part})
    assert_error(refused, 422, "invalid_input", "Session ID must be provided")
    saved = api.post(
        "artifacts", {"filename": "reports/may.txt", "artifact": part, "sessionId": "s1"}
    )
    assert saved.status_code == 201
    api.post("artifacts", {"filename": "user:profile", "artifact": part})
    assert api.get("artifacts/reports/may.txt", session_id="s1").json() == part
    assert api.get("artifacts", session_id="s1").json() == {
        "filenames": ["reports/may.txt", "user:profile"]
    }
    assert api.get("artifacts").json() == {"filenames": ["user:profile"]}
    assert Artifact.objects.get(filename="reports/may.txt").session_id == "s1"


def test_any_filename_can_be_addressed(api):
    name = "user:odd name\nwith newline?&#%.txt"
    saved = api.post("artifacts", {"filename": name, "artifact": {"text": "x"}})
    assert saved.status_code == 201
    path = "artifacts/" + quote(name, safe="")
    assert api.get(path).json() == {"text": "x"}
    assert api.delete(path).json() == {"deleted": 1}


def test_a_filename_in_the_query_is_taken_exactly(api):
    """The query routes reach names a path would normalise ("a//b" into "a/b")."""
    for name, text in (("a//b", "double"), ("a/b", "single"), ("dir/", "slash")):
        api.post("artifacts", {"filename": name, "artifact": {"text": text}, "sessionId": "s1"})
    assert api.get("artifact", filename="a//b", session_id="s1").json() == {"text": "double"}
    assert api.get("artifact", filename="dir/", session_id="s1", version="0").json() == {
        "text": "slash"
    }
    versions = api.get("artifact-versions", filename="a//b", session_id="s1").json()
    assert [v["version"] for v in versions["versions"]] == [0]
    missing = api.get("artifact", filename="dir", session_id="s1")
    assert_error(missing, 404, "artifact_not_found", "'dir'")
    query = urlencode({"filename": "a//b", "session_id": "s1"})
    deleted = api.client.delete(api.url(f"artifact?{query}"), headers=api._headers(...))
    assert deleted.json() == {"deleted": 1}
    assert sorted(Artifact.objects.values_list("filename", flat=True)) == ["a/b", "dir/"]
    # the path routes still serve names a path carries unchanged
    assert api.get("artifacts/a/b", session_id="s1").json() == {"text": "single"}
    unnamed = api.get("artifact", session_id="s1")
    assert_error(unnamed, 422, "invalid_request")


def test_an_artifact_part_must_be_a_known_kind(api):
    empty = api.post("artifacts", {"filename": "user:x", "artifact": {}})
    assert_error(empty, 422, "invalid_input", "Not supported artifact type")
    bad_bytes = api.post(
        "artifacts", {"filename": "user:x", "artifact": {"inlineData": {"data": "!!"}}}
    )
    assert_error(bad_bytes, 422, "invalid_request", "base64")
    assert not Artifact.objects.exists()


# --- corrections -------------------------------------------------------------------------


def test_report_a_correction(api):
    response = api.post("corrections", {"sessionId": "s1", "about": "penicillin allergy"})
    assert response.status_code == 201
    assert response.json() == {"matchedEviction": False}
    correction = Correction.objects.get()
    assert (correction.app_name, correction.user_id, correction.session_id) == (APP, USER, "s1")


# --- malformed requests --------------------------------------------------------------------


def test_malformed_bodies_are_4xx_with_a_message(api):
    assert_error(api.post("sessions", raw="{not json"), 400, "invalid_json", "not JSON")
    nan = '{"event": {"author": "u", "timestamp": NaN}}'
    new_session(api)
    assert_error(api.post("sessions/s1/events", raw=nan), 400, "invalid_json", "NaN")
    huge = '{"sessionId": "s2", "state": {"n": 1e400}}'  # past a float: not Infinity
    assert_error(api.post("sessions", raw=huge), 400, "invalid_json", "1e400", "too large")
    assert not AgentSession.objects.filter(session_id="s2").exists()
    assert_error(api.post("sessions", raw="[1, 2]"), 422, "invalid_request")
    wrong_type = api.post("memory/search", {"query": 42})
    assert_error(wrong_type, 422, "invalid_request", "body.query", "not of type 'string'")
    missing = api.post("memory/search", {})
    assert_error(missing, 422, "invalid_request", "body.query", "Field required")
    extra = api.post("sessions", {"sessionId": "s2", "owner": "me"})
    assert_error(extra, 422, "invalid_request", "body.owner", "Extra inputs")
    assert AgentSession.objects.count() == 1


def test_json_types_are_the_documents_not_coerced(api):
    new_session(api)
    # pydantic alone would read false as a timestamp of 0.0 and "2" as an integer
    url = "sessions/s1/events"
    response = api.post(url, {"event": event("hi", timestamp=False), "revision": "0"})
    body = assert_error(response, 422, "invalid_request", "body.event.timestamp")
    assert body["errors"][0]["loc"] == ["body", "event", "timestamp"]
    response = api.post("artifacts", {"filename": "user:x", "artifact": {"text": 5}})
    assert_error(response, 422, "invalid_request", "body.artifact.text")
    assert api.get("sessions/s1").json()["events"] == []


def test_unknown_query_parameters_are_refused(api):
    api.post("artifacts", {"filename": "notes.txt", "artifact": {"text": "x"}, "sessionId": "s1"})
    # a misspelt session_id must not silently widen or narrow what is deleted
    response = api.client.delete(
        api.url("artifacts/notes.txt") + "?sesion_id=s1", headers=api._headers(...)
    )
    assert_error(response, 422, "invalid_request", "query.sesion_id", "allowed: session_id")
    assert api.get("artifacts/notes.txt", session_id="s1").status_code == 200
    assert_error(api.get("state", verbose=1), 422, "invalid_request", "takes none")
    twice = api.get("artifacts/notes.txt", session_id=["s1", "s2"])
    assert_error(twice, 422, "invalid_request", "query.session_id", "more than once")


@pytest.mark.parametrize("value", ["1.0", "0.0", "1e0", "+1", " 1", "1_0", "²"])
def test_integer_query_parameters_take_digits_only(api, value):
    """The document says integer, and pydantic alone would read "1.0" as 1."""
    new_session(api)
    api.post("artifacts", {"filename": "user:a.txt", "artifact": {"text": "x"}})
    for path, name in (("sessions", "limit"), ("artifacts/user:a.txt", "version"),
                       ("sessions/s1", "num_recent_events")):  # fmt: skip
        response = api.get(path, **{name: value})
        assert_error(response, 422, "invalid_request", f"query.{name}", "whole number")
    assert api.get("sessions", limit="-1").status_code == 422  # a number, below its minimum
    assert api.get("sessions", limit="2").status_code == 200
    assert api.get("artifacts/user:a.txt", version="-1").status_code == 404  # read, not found


def test_an_oversized_body_is_413_and_nothing_is_written(api, settings):
    settings.MEMADMIN_API_MAX_BODY_BYTES = 1000
    big = {"sessionId": "big", "state": {"blob": "x" * 2000}}
    assert_error(api.post("sessions", big), 413, "payload_too_large", "at most 1000")
    assert not AgentSession.objects.exists()
    assert api.post("sessions", {"sessionId": "small"}).status_code == 201


@pytest.mark.postgres
def test_nul_in_text_is_stored_as_a_replacement_character_on_every_database(api):
    # PostgreSQL refuses NUL in text; records.storable replaces it everywhere alike.
    new = new_session(api)
    response = api.post(
        "sessions/s1/events", {"event": event("nul \x00 inside"), "revision": new["revision"]}
    )
    assert response.status_code in (200, 201), response.content
    [stored] = SessionEvent.objects.all()
    assert stored.data["content"]["parts"][0]["text"] == "nul \ufffd inside"


def test_a_lone_surrogate_in_an_event_is_stored_and_answered_as_a_replacement_character(api):
    """As NUL: the event is stored with U+FFFD, and the answer says so (it was a 422
    after the write, so the caller took a stored event for a refused one)."""
    session = new_session(api)
    response = append(api, session, event("hi \ud800 there"))
    assert response.status_code == 200, response.content
    assert response.json()["event"]["content"]["parts"][0]["text"] == "hi \ufffd there"
    [stored] = SessionEvent.objects.all()
    assert stored.data["content"]["parts"][0]["text"] == "hi \ufffd there"


def test_a_state_key_holding_a_lone_surrogate_is_refused_plainly(api, caplog):
    """As in process: a 422 naming the key, nothing written, no codec error or logged
    traceback (ADK's state serialiser logged one, and the answer quoted the codec)."""
    session = new_session(api)
    for delta in ({"k\ud800": 1}, {"k": {"inner\udfff": 1}}, {"user:\udc00x": 1}):
        caplog.clear()
        response = append(api, session, event("hi", actions={"stateDelta": delta}))
        assert_error(response, 422, "invalid_input", "lone surrogate")
        assert "codec" not in response.json()["detail"]
        assert not [r for r in caplog.records if r.exc_info]
    assert not SessionEvent.objects.exists()
    assert AgentSession.objects.get().state == {}


def test_an_unknown_api_path_is_a_json_404(api):
    assert_error(api.get("nothing-here"), 404, "not_found", "/api/v1/docs")
    assert_error(api.get("/apps"), 404, "not_found")
    assert_error(api.get("/"), 404, "not_found", "/api/v1/docs")
    assert_error(api.delete("nothing/here"), 404, "not_found")  # not a CSRF page


def test_a_retried_append_with_a_revision_of_non_ascii_digits_is_not_an_internal_error(api):
    session = new_session(api)
    ev = event("I am allergic to penicillin", id="ev-1")
    assert append(api, session, ev).status_code == 200
    row_id = AgentSession.objects.get().id
    # "²" is a digit to str.isdigit, not to int()
    retry = append(api, {**session, "revision": f"{row_id}.²"}, ev)
    assert "invalid literal" not in retry.text
    assert_error(retry, 409, "stale_session", "get_session")  # no revision we ever gave
    assert SessionEvent.objects.count() == 1
