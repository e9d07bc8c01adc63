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
    assert "<code>max_records</code> 500 → <strong>300</strong>" in content
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
