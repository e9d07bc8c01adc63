"""The audit log page: filters, pagination, htmx partial, bounded queries."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memadmin import audit
from memadmin.models import AuditEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def entries(make_user):
    sam, olga = make_user("sam", "support"), make_user("olga", "ops")
    audit.record(
        sam,
        audit.RECORD_PIN,
        app_name="pharmacy",
        user_id="alice",
        target=1,
        before={"pinned": False},
        after={"pinned": True},
    )
    audit.record(
        sam,
        audit.RECORD_IMPORTANCE,
        app_name="travel",
        user_id="bob",
        target=2,
        before={"importance": 0.2},
        after={"importance": 0.9},
        reason="asked",
    )
    audit.record(
        olga,
        audit.POLICY_UPDATE,
        app_name="pharmacy",
        target="v2",
        before={"max_records": 500},
        after={"max_records": 300},
        reason="smaller",
    )


def actions(response):
    return [row.entry.action for row in response.context["page"].object_list]


def test_newest_first_with_before_and_after(login, entries):
    response = login("compliance").get(reverse("audit"))
    assert response.status_code == 200
    assert actions(response) == ["policy.update", "record.importance", "record.pin"]
    content = response.content.decode()
    assert "max records per user 500 → <strong>300</strong>" in content
    assert "max_records" not in content
    assert "smaller" in content


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"action": "record.pin"}, ["record.pin"]),
        ({"actor": "sam"}, ["record.importance", "record.pin"]),
        ({"app": "pharmacy"}, ["policy.update", "record.pin"]),
        ({"user": "bob"}, ["record.importance"]),
        ({"app": "pharmacy", "actor": "olga"}, ["policy.update"]),
    ],
)
def test_filters(login, entries, query, expected):
    assert actions(login("ops").get(reverse("audit"), query)) == expected


def test_date_range_includes_the_whole_last_day(login, entries):
    today = timezone.localdate()
    client = login("ops")
    assert len(actions(client.get(reverse("audit"), {"since": today, "until": today}))) == 3
    yesterday = today - timedelta(days=1)
    assert actions(client.get(reverse("audit"), {"until": yesterday})) == []
    response = client.get(reverse("audit"), {"since": today, "until": yesterday})
    assert response.status_code == 422
    assert "The end date is before the start date." in response.content.decode()


def test_htmx_gets_the_table_only(login, entries):
    response = login("ops").get(reverse("audit"), {"actor": "olga"}, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert "<nav" not in content.split('id="audit-table"')[0]
    assert 'id="audit-table"' in content and "policy.update" in content


def test_pages_of_fifty_in_constant_queries(login, make_user):
    client = login("ops")
    actor = make_user("sam", "support")

    def count(page):
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(reverse("audit"), {"page": page})
        return len(ctx.captured_queries), response

    for i in range(60):
        audit.record(actor, audit.RECORD_PIN, app_name="a", user_id=f"u{i}", target=i)
    small, _ = count(2)
    for i in range(60, 400):
        audit.record(actor, audit.RECORD_PIN, app_name="a", user_id=f"u{i}", target=i)
    large, response = count(2)
    assert small == large
    assert len(response.context["page"].object_list) == 50
    assert response.context["page"].paginator.count == AuditEntry.objects.count() == 400


def test_markup_in_user_ids_and_reasons_renders_as_text(login, make_user):
    audit.record(
        make_user("sam"),
        audit.RECORD_PIN,
        app_name="a",
        user_id="<script>alert(1)</script>",
        reason="<img src=x onerror=alert(2)>",
    )
    content = login("ops").get(reverse("audit")).content.decode()
    assert "<script>alert(1)" not in content and "<img src=x" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content


def test_targets_link_to_their_pages_and_keys_read_as_words(login, make_user):
    olga = make_user("olga", "ops")
    audit.record(olga, audit.RECORD_PIN, app_name="pharmacy", user_id="alice", target=7)
    audit.record(olga, audit.POLICY_UPDATE, app_name="pharmacy", target="v3")
    audit.record(olga, audit.RUN_START, app_name="pharmacy", target=41, after={"dry_run": True})
    audit.record(
        olga,
        audit.PLAN_APPLY,
        app_name="pharmacy",
        target=40,
        before={"sessions_pending": 10, "records_pending": 0},
        after={"apply_run": 42, "sessions_to_retire": 10, "records_to_evict": 0},
    )
    audit.record(olga, audit.RULE_CHANGE, app_name="travel", target="allergies")
    audit.record(olga, audit.ERASURE_SUBMIT, app_name="pharmacy", target="erasure #5")
    content = login("compliance").get(reverse("audit")).content.decode()
    for url, text in (
        (reverse("records:user", args=["pharmacy", "alice"]) + "#record-7", "7"),
        (reverse("records:policy", args=["pharmacy"]), "v3"),
        (reverse("sweeper:run", args=[41]), "41"),
        (reverse("sweeper:run", args=[40]), "40"),
        (reverse("records:rules") + "?app=travel", "allergies"),
        (reverse("erasure:detail", args=[5]), "erasure #5"),
    ):
        assert f'<a href="{url}">{text}</a>' in content, url
    # each side's own keys, in words, without a dash standing for "not on this side"
    assert "sessions awaiting retirement: was 10" in content
    assert "records to evict: <strong>0</strong>" in content
    assert "dry-run: <strong>yes</strong>" in content
    for internal in ("sessions_pending", "→ —", "apply_run", "dry_run"):
        assert internal not in content
