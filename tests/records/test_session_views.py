"""Sessions: idle and active per app, events in order with compaction shown apart,
artifacts with versions and sizes, and tombstones of retired sessions."""

import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from records.models import AgentSession, Artifact, RetiredSession, SessionEvent
from records.policies import policy_for, update_policy
from tests.records.rows import make_record, make_session

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def adk(text=None, *, author="user", call=None, summary=None, ts=1_700_000_000.0) -> dict:
    parts = [types.Part(text=text)] if text else []
    if call:
        parts.append(types.Part(function_call=types.FunctionCall(name=call, args={"id": 7})))
    actions = EventActions()
    if summary:
        actions = EventActions(
            compaction=EventCompaction(
                start_timestamp=ts - 600,
                end_timestamp=ts - 60,
                compacted_content=types.Content(role="model", parts=[types.Part(text=summary)]),
            )
        )
    event = Event(
        author=author,
        timestamp=ts,
        content=types.Content(role="user", parts=parts) if parts else None,
        actions=actions,
    )
    return event.model_dump(mode="json", exclude_none=True)


def test_sessions_list_idle_and_active_per_app_and_filters(login):
    policy_for("pharmacy")
    update_policy("pharmacy", {"session_idle_days": 2})
    make_session("pharmacy", "alice", session_id="old", idle_days=5)
    make_session("pharmacy", "bob", session_id="new", idle_days=0.5)
    make_session("travel", "carol", session_id="t1", idle_days=5)  # default: 7 days
    client = login("compliance")
    response = client.get(reverse("records:sessions"))
    assert response.status_code == 200
    counts = {c.app_name: (c.total, c.idle, c.active) for c, _ in response.context["counts"]}
    assert counts == {"pharmacy": (2, 1, 1), "travel": (1, 0, 1)}
    response = client.get(
        reverse("records:sessions"), {"app": "pharmacy", "state": "idle"}, headers=HX
    )
    assert b"<nav" not in response.content
    assert [s.session_id for s in response.context["page"].object_list] == ["old"]
    response = client.get(reverse("records:sessions"), {"q": "carol"})
    assert [s.session_id for s in response.context["page"].object_list] == ["t1"]


def test_session_page_shows_events_in_order_and_compaction_apart(login):
    session = make_session(
        "pharmacy",
        "alice",
        events=[
            adk("I am allergic to penicillin.", ts=1_700_000_001),
            adk(author="agent", call="lookup_order", ts=1_700_000_002),
            adk(author="agent", summary="User discussed a penicillin allergy.", ts=1_700_000_003),
        ],
    )
    response = login("support").get(reverse("records:session", args=[session.pk]))
    assert response.status_code == 200
    content = response.content.decode()
    first = content.index("I am allergic to penicillin.")
    call = content.index("lookup_order")
    summary = content.index("User discussed a penicillin allergy.")
    assert first < call < summary
    assert 'class="event compaction"' in content and "compaction summary" in content
    assert content.count('class="event compaction"') == 1


def test_session_page_lists_its_artifacts_and_the_users_with_sizes(login):
    session = make_session("pharmacy", "alice", session_id="s1")
    now = timezone.now()
    for sid, name, version, data in [
        ("s1", "receipt.txt", 0, b"12345"),
        ("s1", "receipt.txt", 1, b"1234567"),
        ("", "profile.json", 0, b"{}"),
        ("s2", "elsewhere.txt", 0, b"x"),
    ]:
        Artifact.objects.create(
            app_name="pharmacy",
            user_id="alice",
            session_id=sid,
            filename=name,
            version=version,
            data=data,
            created_at=now,
        )
    response = login("support").get(reverse("records:session", args=[session.pk]))
    rows = {(a.filename, a.version, a.size, a.user_scoped) for a in response.context["artifacts"]}
    assert rows == {
        ("receipt.txt", 0, 5, False),
        ("receipt.txt", 1, 7, False),
        ("profile.json", 0, 2, True),
    }
    assert b"elsewhere.txt" not in response.content


def test_tombstone_page_keeps_provenance(login):
    now = timezone.now()
    tombstone = RetiredSession.objects.create(
        app_name="pharmacy",
        user_id="alice",
        session_id="gone",
        created_at=now,
        last_update_time=now.timestamp(),
        event_count=12,
        retired_at=now,
        run_id=7,
    )
    make_record("pharmacy", "alice", source_session_id="gone")
    response = login("ops").get(reverse("records:retired_session", args=[tombstone.pk]))
    assert response.status_code == 200
    assert response.context["records"] == 1
    assert b"run 7" in response.content and b"gone" in response.content


def test_unknown_session_is_404(login):
    client = login("ops")
    assert client.get(reverse("records:session", args=[999])).status_code == 404
    assert client.get(reverse("records:retired_session", args=[999])).status_code == 404


def test_markup_in_user_ids_and_event_text_renders_as_text(login):
    user = "<script>alert('u')</script>"
    session = make_session(
        "pharmacy", user, events=[adk("<script>alert('t')</script>", author="<b>x</b>")]
    )
    now = timezone.now()
    tombstone = RetiredSession.objects.create(
        app_name="pharmacy",
        user_id=user,
        session_id="<script>alert('s')</script>",
        created_at=now,
        last_update_time=now.timestamp(),
        event_count=1,
        retired_at=now,
    )
    client = login("support")
    for url in (
        reverse("records:sessions"),
        reverse("records:session", args=[session.pk]),
        reverse("records:retired_session", args=[tombstone.pk]),
    ):
        content = client.get(url).content.decode()
        assert "<script>alert(" not in content and "<b>x</b>" not in content
        assert "&lt;script&gt;alert(" in content


def test_session_pages_query_counts_do_not_grow(login):
    client = login("ops")

    def count(url):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    session = make_session("pharmacy", "alice", events=[adk(f"m{i}") for i in range(5)])
    for i in range(3):
        make_session("pharmacy", f"u{i}")
    small = count(reverse("records:sessions")), count(reverse("records:session", args=[session.pk]))
    big = make_session("pharmacy", "bob", events=[adk(f"m{i}") for i in range(400)])
    for i in range(3, 120):
        make_session("travel", f"u{i}")
    large = (count(reverse("records:sessions")), count(reverse("records:session", args=[big.pk])))
    assert small == large


# Stamps stored before timestamps were validated (or written around it): milliseconds,
# the largest double, past 9999-12-31, before 0001-01-01, and the extremes that still
# are dates. None of them may break a page.
STORED_BAD_STAMPS = [1796266895557, 1e308, 253402300800, -62135596801, 253402300799.0, -62135596800]


def test_sessions_pages_render_any_stored_stamp(login, on_postgres):
    non_finite = [math.inf, -math.inf, math.nan] if on_postgres else []  # SQLite: no NaN
    stamps = STORED_BAD_STAMPS + non_finite
    make_session("pharmacy", "alice", session_id="ok", idle_days=0.5)
    bad = []
    for i, stamp in enumerate(stamps):
        event = adk("hello", ts=stamp) if math.isfinite(stamp) else adk("hello")  # JSON: finite
        session = make_session("pharmacy", f"u{i}", session_id=f"bad{i}", events=[event])
        AgentSession.objects.filter(pk=session.pk).update(last_update_time=stamp)
        SessionEvent.objects.filter(session=session).update(timestamp=stamp)
        bad.append(session)
    client = login("support")
    url = reverse("records:sessions")
    for query in ({}, {"app": "pharmacy"}, {"state": "idle"}, {"state": "active"}, {"q": "bad"}):
        for page in (1, "last"):
            response = client.get(url, {**query, "page": page})
            assert response.status_code == 200, (query, page)
    shown = {s.session_id: s for s in client.get(url).context["page"].object_list}
    assert "invalid time" in client.get(url).content.decode()
    assert shown["bad0"].last_update is None and shown["bad0"].last_update_raw == 1796266895557
    # a stamp no clock can reach never turns idle by itself: it counts as idle now
    assert all(shown[s.session_id].idle for s in bad)
    assert not shown["ok"].idle
    for session in bad:
        response = client.get(reverse("records:session", args=[session.pk]))
        assert response.status_code == 200 and b"hello" in response.content


def test_an_invalid_filter_keeps_the_others_and_what_was_typed(login):
    make_session("shop", "alice", session_id="s-shop")
    make_session("travel", "bob", session_id="s-travel")
    assert AgentSession.objects.count() == 2
    long = "x" * 201
    page = login("support").get(reverse("records:sessions"), {"app": "shop", "q": long})
    html = page.content.decode()
    assert page.status_code == 200
    assert "s-shop" in html and "s-travel" not in html  # the app filter still applies
    assert f'value="{long}"' in html and "That filter is not applied" in html
