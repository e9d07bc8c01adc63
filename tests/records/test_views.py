from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from records.models import MemoryRecord
from records.policies import update_policy

pytestmark = pytest.mark.django_db


def add_records(app, user, n, *, tokens=10, pinned=0, content="note"):
    now = timezone.now()
    MemoryRecord.objects.bulk_create(
        MemoryRecord(
            app_name=app,
            user_id=user,
            content=content,
            created_at=now,
            last_accessed_at=now - timedelta(days=30),
            tokens=tokens,
            pinned=i < pinned,
        )
        for i in range(n)
    )


def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("records:users"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_is_public(client):
    assert client.get(reverse("login")).status_code == 200


def test_users_page_lists_counts_tokens_and_cap_use(login):
    add_records("pharmacy", "alice", 250, tokens=10, pinned=2)
    add_records("pharmacy", "bob", 3, tokens=1000)
    update_policy("pharmacy", {"max_records": 500, "max_tokens": 4000})
    response = login("support").get(reverse("records:users"))
    assert response.status_code == 200
    rows = {(r.app_name, r.user_id): r for r in response.context["page"].object_list}
    alice, bob = rows["pharmacy", "alice"], rows["pharmacy", "bob"]
    assert (alice.records, alice.tokens, alice.pinned) == (250, 2500, 2)
    assert alice.cap_percent == 62  # tokens 2500/4000 beat records 250/500
    assert (bob.records, bob.tokens, bob.cap_percent) == (3, 3000, 75)
    assert b"alice" in response.content and b"<html" in response.content


def test_users_page_search_and_htmx_partial(login):
    add_records("pharmacy", "alice", 2)
    add_records("travel", "bob", 1)
    client = login("ops")
    response = client.get(reverse("records:users"), {"q": "ali"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b"<html" not in response.content  # only the table partial
    assert b"alice" in response.content and b"bob" not in response.content


def test_users_page_sorts_and_paginates_with_constant_queries(login):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login("support")

    def queries_for_page():
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(reverse("records:users"), {"sort": "records", "page": 2})
        return len(ctx.captured_queries), response

    for i in range(60):
        add_records("app", f"user-{i:02d}", i + 1)
    small, _ = queries_for_page()
    for i in range(60, 300):
        add_records("other", f"user-{i:03d}", 1)
    large, response = queries_for_page()
    assert small == large  # one aggregate per page, never one query per user
    page = response.context["page"]
    assert page.paginator.count == 300
    assert [r.user_id for r in page.object_list][:2] == ["user-09", "user-08"]


def test_user_content_with_markup_renders_as_text(login):
    add_records("app", "<script>alert(1)</script>", 1)
    response = login("support").get(reverse("records:users"))
    assert b"<script>alert(1)</script>" not in response.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content


def test_healthz_is_public(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_column_headers_sort_both_ways_and_keep_the_search(login):
    add_records("shop", "alice", 2)
    add_records("shop", "bob", 5)
    add_records("shop", "amy", 9)
    client = login("support")
    url = reverse("records:users")

    def users(**params):
        response = client.get(url, params, headers={"HX-Request": "true"})
        return response, [r.user_id for r in response.context["page"].object_list]

    response, order = users(q="a", sort="records")
    assert order == ["amy", "alice"]
    content = response.content.decode()
    # the sorted column links to the other direction, the search is kept
    assert 'href="?q=a&amp;sort=records&amp;dir=asc"' in content
    assert 'href="?q=a&amp;sort=user&amp;dir=asc"' in content
    assert 'aria-sort="descending"' in content
    assert users(q="a", sort="records", dir="asc")[1] == ["alice", "amy"]
    assert users(sort="user", dir="desc")[1] == ["bob", "amy", "alice"]
    assert users(sort="nonsense")[1] == ["amy", "bob", "alice"]  # falls back to records


def test_users_link_to_their_page(login):
    add_records("pharmacy", "alice", 1)
    content = login("ops").get(reverse("records:users")).content.decode()
    assert f'href="{reverse("records:user", args=["pharmacy", "alice"])}"' in content


def test_users_page_needs_a_role(login):
    assert login(username="nobody").get(reverse("records:users")).status_code == 403
