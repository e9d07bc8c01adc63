"""render_page: whole page or partial, with Vary: HX-Request; the one pager partial."""

import pytest
from django.urls import reverse

from tests.records.rows import make_records

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


@pytest.mark.parametrize(
    "name, args",
    [
        ("records:users", []),
        ("records:sessions", []),
        ("records:user", ["pharmacy", "alice"]),
        ("sweeper:sweeps", []),
        ("audit", []),
        ("erasure:list", []),
    ],
)
def test_pages_that_answer_htmx_with_a_partial_vary_on_the_header(login, name, args):
    client = login("support", "ops", "compliance")
    make_records("pharmacy", "alice", 1)
    url = reverse(name, args=args)
    full, partial = client.get(url), client.get(url, headers=HX)
    assert full.status_code == partial.status_code == 200
    for response in (full, partial):
        assert "HX-Request" in response["Vary"]
    assert b"<html" in full.content and b"<html" not in partial.content


def test_the_pager_keeps_the_users_search_and_sort_and_counts_the_rows(login):
    client = login("support")
    for n in range(51):
        make_records("pharmacy", f"u{n:02d}", 1)
    html = client.get(reverse("records:users"), {"q": "u", "sort": "user", "dir": "asc"}).content
    html = html.decode()
    assert 'aria-label="Pages"' in html
    assert "Page 1 of 2 · 51 users" in html
    assert 'href="?q=u&amp;sort=user&amp;dir=asc&amp;page=2"' in html
    assert 'hx-target="#user-table"' in html
    assert "Previous" not in html  # no page before the first


def test_the_user_page_pager_links_to_the_user_page_itself(login):
    client = login("support")
    make_records("pharmacy", "alice", 120)
    html = client.get(reverse("records:user", args=["pharmacy", "alice"]), {"page": 2}).content
    here = reverse("records:user", args=["pharmacy", "alice"])
    assert f'href="{here}?page=1"' in html.decode() and f'href="{here}?page=3"' in html.decode()


def test_views_that_branch_on_htmx_themselves_vary_too(login):
    from sweeper import runs
    from sweeper.models import RunKind

    client = login("ops")
    make_records("pharmacy", "alice", 1)
    run = runs.create_run(RunKind.SWEEP, app_name="pharmacy", dry_run=True, enqueue=False)
    for url in (
        reverse("sweeper:run", args=[run.pk]),
        reverse("records:preview", args=["pharmacy", "alice"]) + "?max_records=1",
    ):
        assert "HX-Request" in client.get(url, headers=HX)["Vary"]
        assert "HX-Request" in client.get(url)["Vary"]
