"""The user page: records against the caps, pin/unpin/importance in place, dry-runs."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memadmin.models import AuditEntry
from records.models import MemoryRecord, RetiredSession
from records.policies import policy_for, update_policy
from tests.records.rows import make_record, make_records, make_session

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
SECRET = "allergic to penicillin"


def user_url(app="pharmacy", user="alice"):
    return reverse("records:user", args=[app, user])


def action_url(name, record, app="pharmacy", user="alice"):
    return reverse(f"records:{name}", args=[app, user, record.pk])


@pytest.fixture
def records():
    """Five records at a cap of three: the two lowest unpinned scores would go."""
    policy_for("pharmacy")
    update_policy("pharmacy", {"max_records": 3})
    return [
        make_record("pharmacy", "alice", importance=i / 10, content=f"fact {i}")
        for i in (9, 7, 5, 3, 1)
    ]


def test_records_are_listed_best_first_with_scores_and_the_cap_line(login, records):
    response = login("support").get(user_url())
    assert response.status_code == 200
    rows = response.context["page"].object_list
    assert [r.record.content for r in rows] == ["fact 9", "fact 7", "fact 5", "fact 3", "fact 1"]
    best = rows[0].standing
    assert (best.rank, best.cumulative_tokens) == (1, 10)
    # Last accessed one half-life (30 days) before the record was made; the page reads
    # the real clock, so the seconds a loaded machine takes in between lower recency a
    # little (0.4999995 after 3.7 s): 1e-4 allows some 20 minutes.
    assert best.score.total == pytest.approx(0.5 * 0.5 + 0.0 * 0 + 0.5 * 0.9, abs=1e-4)
    assert best.score.importance == 0.9 and best.score.recency == pytest.approx(0.5, abs=1e-4)
    assert [r.standing.first_over_cap for r in rows] == [False, False, False, True, False]
    assert [r.victim_reason for r in rows] == [None, None, None, "record_cap", "record_cap"]
    content = response.content.decode()
    assert "Cap line" in content and "would go: record_cap" in content
    assert response.context["victim_count"] == 2


def test_pinned_record_below_the_line_is_kept(login, records):
    records[-1].pinned = True
    records[-1].save()
    response = login("support").get(user_url())
    rows = response.context["page"].object_list
    assert [r.victim_reason for r in rows] == [None, None, "record_cap", "record_cap", None]
    assert "below the line, kept" in response.content.decode()


def test_source_session_links_to_the_session_then_the_tombstone(login):
    live = make_session("pharmacy", "alice", session_id="live-1")
    gone = RetiredSession.objects.create(
        app_name="pharmacy",
        user_id="alice",
        session_id="gone-1",
        created_at=timezone.now(),
        last_update_time=0,
        event_count=1,
        retired_at=timezone.now(),
    )
    make_record("pharmacy", "alice", source_session_id="live-1")
    make_record("pharmacy", "alice", source_session_id="gone-1")
    make_record("pharmacy", "alice", source_session_id="nowhere-1")
    content = login("compliance").get(user_url()).content.decode()
    live_url = reverse("records:session", args=[live.pk])
    gone_url = reverse("records:retired_session", args=[gone.pk])
    assert f'href="{live_url}" title="live-1">live-1</a>' in content
    assert f'href="{gone_url}" title="gone-1">gone-1</a>' in content
    assert "nowhere-1" in content and "nowhere-1</a>" not in content


def test_support_pins_in_place_with_an_audit_entry_without_content(login, records):
    record = make_record("pharmacy", "alice", content=SECRET, importance=0.0)
    client = login("support", username="sam")
    response = client.post(action_url("pin", record), headers=HX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.lstrip().startswith(f'<tr id="record-{record.pk}"')  # the row, not a page
    assert "pinned" in content and "Unpin" in content
    record.refresh_from_db()
    assert record.pinned
    entry = AuditEntry.objects.get()
    assert (entry.actor_username, entry.action) == ("sam", "record.pin")
    assert entry.target == str(record.pk)
    assert (entry.app_name, entry.user_id) == ("pharmacy", "alice")
    assert (entry.before, entry.after) == ({"pinned": False}, {"pinned": True})
    assert "penicillin" not in str(AuditEntry.objects.values().get())

    response = client.post(action_url("unpin", record), headers=HX)
    assert response.status_code == 200 and ">Pin</button>" in response.content.decode()
    record.refresh_from_db()
    assert not record.pinned
    assert AuditEntry.objects.filter(action="record.unpin").count() == 1


def test_pin_without_javascript_redirects_back_with_a_message(login, records):
    client = login("support")
    response = client.post(action_url("pin", records[0]), follow=True)
    assert response.redirect_chain[-1][0] == user_url()
    assert b"Record" in response.content and b"pinned." in response.content
    records[0].refresh_from_db()
    assert records[0].pinned


@pytest.mark.parametrize("roles", [("ops",), ("compliance",), ()])
def test_other_roles_cannot_pin_or_change_importance(login, records, roles):
    client = login(*roles, username="other")
    record = records[0]
    assert client.post(action_url("pin", record), headers=HX).status_code == 403
    response = client.post(action_url("importance", record), {"importance": 1, "reason": "x"})
    assert response.status_code == 403
    record.refresh_from_db()
    assert not record.pinned and record.importance == 0.9
    assert not AuditEntry.objects.exists()


def test_anonymous_cannot_pin(client, records):
    response = client.post(action_url("pin", records[0]))
    assert response.status_code == 302 and reverse("login") in response["Location"]
    records[0].refresh_from_db()
    assert not records[0].pinned


@pytest.mark.parametrize(("app", "user"), [("pharmacy", "bob"), ("travel", "alice")])
def test_a_record_of_another_user_or_app_is_404_and_unchanged(login, records, app, user):
    client = login("support")
    record = records[0]
    assert client.post(action_url("pin", record, app, user), headers=HX).status_code == 404
    response = client.post(
        action_url("importance", record, app, user), {"importance": 0.1, "reason": "x"}
    )
    assert response.status_code == 404
    record.refresh_from_db()
    assert not record.pinned and record.importance == 0.9
    assert not AuditEntry.objects.exists()


def test_pin_needs_post(login, records):
    assert login("support").get(action_url("pin", records[0])).status_code == 405


def test_support_changes_importance_with_a_reason(login, records):
    record = records[-1]
    client = login("support", username="sam")
    response = client.post(
        action_url("importance", record),
        {"importance": "0.95", "reason": "customer asked"},
        headers=HX,
    )
    assert response.status_code == 200
    record.refresh_from_db()
    assert (record.importance, record.importance_source) == (0.95, "staff")
    assert "0.95" in response.content.decode() and "staff" in response.content.decode()
    entry = AuditEntry.objects.get()
    assert entry.action == "record.importance" and entry.reason == "customer asked"
    assert entry.before == {"importance": 0.1, "importance_source": "default"}
    assert entry.after == {"importance": 0.95, "importance_source": "staff"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"importance": "1.5", "reason": "x"}, "0 (forgettable) to 1 (essential). 1.5 is outside"),
        ({"importance": "-1", "reason": "x"}, "-1 is outside"),
        ({"importance": "lots", "reason": "x"}, "must be a number from 0"),
        ({"importance": "0.5", "reason": ""}, "Say why the importance changes"),
    ],
)
def test_bad_importance_is_refused_with_a_clear_message(login, records, data, message):
    record = records[0]
    client = login("support")
    response = client.post(action_url("importance", record), data, headers=HX)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert f'<tr id="record-{record.pk}"' in response.content.decode()
    record.refresh_from_db()
    assert record.importance == 0.9
    assert not AuditEntry.objects.exists()
    # without JavaScript: the page again, the message shown and what was typed kept
    page = client.post(action_url("importance", record), data)
    html = page.content.decode()
    assert page.status_code == 422 and message in html
    assert f'value="{data["reason"]}"' in html and f'value="{data["importance"]}"' in html
    other = records[1]
    assert f'value="{other.importance}"' in html  # other rows show their own values


def test_ops_sees_the_dry_run_and_support_does_not(login, records):
    ops = login("ops").get(user_url())
    assert "Dry-run" in ops.content.decode()
    assert ops.context["preview"]["count"] == 2 and not ops.context["preview"]["what_if"]
    support = login("support", username="sam").get(user_url())
    assert "Dry-run" not in support.content.decode()


def test_what_if_preview_changes_with_the_values_and_changes_nothing(login, records):
    client = login("ops")
    before = list(MemoryRecord.objects.order_by("pk").values())
    values = {
        "ttl_days": 365,
        "half_life_hours": 720,
        "max_records": 1,
        "max_tokens": 40000,
        "w_recency": 0.4,
        "w_frequency": 0.2,
        "w_importance": 0.4,
    }
    url = reverse("records:preview", args=["pharmacy", "alice"])
    response = client.get(url, values, headers=HX)
    assert response.status_code == 200
    assert b"<nav" not in response.content  # the preview partial only
    assert response.context["preview"]["count"] == 4 and response.context["preview"]["what_if"]
    assert "With these values" in response.content.decode()
    shown = [record.content for record, _ in response.context["preview"]["shown"]]
    assert shown == ["fact 1", "fact 3", "fact 5", "fact 7"]  # eviction order
    response = client.get(url, {**values, "max_records": 10}, headers=HX)
    assert response.context["preview"]["count"] == 0
    assert list(MemoryRecord.objects.order_by("pk").values()) == before
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"w_recency": 0.9}, "Weights must sum to 1 (they sum to 1.5000)."),
        ({"max_records": 0}, "Max records per user must be at least 1."),
        ({"half_life_hours": 0}, "Half-life must be positive."),
        ({"half_life_hours": "-1e11"}, "Half-life must be positive."),  # no timedelta holds it
        ({"half_life_hours": "-1e300"}, "Half-life must be positive."),
        ({"ttl_days": "soon"}, "TTL (days) must be a number."),
        ({"ttl_days": 1000000000000}, "TTL must be at most 36500 days (a century)."),
        ({"half_life_hours": "1e300"}, "Half-life must be at most 876000 hours (a century)."),
        ({"max_tokens": 10**12}, "Max tokens must be at most 1000000000."),
    ],
)
def test_what_if_with_bad_values_explains_what_is_wrong(login, records, change, message):
    values = {
        "ttl_days": 365,
        "half_life_hours": 720,
        "max_records": 3,
        "max_tokens": 40000,
        "w_recency": 0.4,
        "w_frequency": 0.2,
        "w_importance": 0.4,
        **change,
    }
    url = reverse("records:preview", args=["pharmacy", "alice"])
    response = login("ops").get(url, values, headers=HX)
    assert response.status_code == 422
    assert message in response.content.decode()


def test_what_if_without_javascript_renders_the_whole_page(login, records):
    url = reverse("records:preview", args=["pharmacy", "alice"])
    values = {
        "ttl_days": 365,
        "half_life_hours": 720,
        "max_records": 2,
        "max_tokens": 40000,
        "w_recency": 0.4,
        "w_frequency": 0.2,
        "w_importance": 0.4,
    }
    response = login("ops").get(url, values)
    assert response.status_code == 200 and b"<nav" in response.content
    assert response.context["preview"]["count"] == 3


@pytest.mark.parametrize("roles", [("support",), ("compliance",)])
def test_only_ops_may_preview(login, records, roles):
    url = reverse("records:preview", args=["pharmacy", "alice"])
    assert login(*roles).get(url, headers=HX).status_code == 403


def test_markup_in_records_and_user_ids_renders_as_text(login):
    user = "<script>alert('u')</script>"
    make_record("pharmacy", user, content="<script>alert('c')</script>", importance=0.0)
    make_records("pharmacy", user, 600)  # over the cap, so the record is a preview victim
    client = login("support", "ops")
    for response in (
        client.get(reverse("records:users")),
        client.get(reverse("records:user", args=["pharmacy", user])),
        client.get(
            reverse("records:preview", args=["pharmacy", user]),
            {
                "ttl_days": 365,
                "half_life_hours": 720,
                "max_records": 1,
                "max_tokens": 40000,
                "w_recency": 0.4,
                "w_frequency": 0.2,
                "w_importance": 0.4,
            },
            headers=HX,
        ),
    ):
        assert response.status_code == 200
        content = response.content.decode()
        assert "<script>alert(" not in content
        assert "&lt;script&gt;alert(" in content


def test_query_count_does_not_grow_with_records(login):
    # over the cap at both sizes, so both pages show victims
    update_policy("pharmacy", {"max_records": 100})
    client = login("support", "ops")

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(user_url(), {"page": 2}).status_code == 200
        return len(ctx.captured_queries)

    make_records("pharmacy", "alice", 120, now=timezone.now() - timedelta(days=3))
    small = count()
    make_records("pharmacy", "alice", 1500)
    assert count() == small


def test_pin_and_importance_still_work_for_user_ids_with_slashes(login):
    user = "tenant/42/alice"
    record = make_record("pharmacy", user)
    client = login("support")
    assert client.get(reverse("records:user", args=["pharmacy", user])).status_code == 200
    url = reverse("records:pin", args=["pharmacy", user, record.pk])
    assert client.post(url, headers=HX).status_code == 200
    record.refresh_from_db()
    assert record.pinned


def test_pin_without_a_csrf_token_is_refused(make_user, records):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("sam", "support"))
    assert client.post(action_url("pin", records[0]), headers=HX).status_code == 403
    records[0].refresh_from_db()
    assert not records[0].pinned and not AuditEntry.objects.exists()


@pytest.mark.parametrize("app", ["pharmacy", "team/bot"])
def test_lists_link_every_user_whatever_their_id_holds(login, app):
    """A line break or a '/' in an id (agents choose them) neither breaks a list page
    for everyone nor sends its link to another user's page."""
    odd = ["line\nbreak", "bob/preview", "..", "eve/records/7/pin"]
    for user in odd:
        make_record(app, user, content=f"note of {user!r}")
        make_session(app, user)
    client = login("support", "ops")
    for page in ("records:users", "records:sessions", "records:policies"):
        assert client.get(reverse(page)).status_code == 200, page
    assert client.get(reverse("records:policy", args=[app])).status_code == 200
    listed = client.get(reverse("records:users")).content.decode()
    for user in odd:
        url = reverse("records:user", args=[app, user])
        assert f'href="{url}"' in listed, user
        page = client.get(url)
        assert page.status_code == 200
        assert page.context["subject"] == user
