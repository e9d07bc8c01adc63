"""Every page: anonymous visitors go to the login page, staff without a role get 403,
and each of the three roles (and superusers) can look."""

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from backtest.models import BacktestRun
from records.models import ImportanceRule, RetiredSession
from records.policies import policy_for
from sweeper import runs
from tests.records.rows import make_record, make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages():
    record = make_record("pharmacy", "alice")
    session = make_session("pharmacy", "alice", events=[{"id": "e1", "author": "user"}])
    tombstone = RetiredSession.objects.create(
        app_name="pharmacy",
        user_id="alice",
        session_id="old",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        last_update_time=0,
        event_count=2,
        retired_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    policy_for("pharmacy")
    rule = ImportanceRule.objects.create(name="vip", pattern="vip", importance=0.7)
    run = runs.create_run("sweep", dry_run=True, enqueue=False)
    backtest = BacktestRun.objects.create(app_name="pharmacy", days=7, candidate={})
    return [
        reverse("home"),
        reverse("records:overview"),
        reverse("records:users"),
        reverse("records:user", args=["pharmacy", "alice"]),
        reverse("records:sessions"),
        reverse("records:session", args=[session.pk]),
        reverse("records:retired_session", args=[tombstone.pk]),
        reverse("records:policies"),
        reverse("records:policy", args=["pharmacy"]),
        reverse("records:rules"),
        reverse("records:rule", args=[rule.pk]),
        reverse("records:embeddings"),
        reverse("sweeper:sweeps"),
        reverse("sweeper:run", args=[run.pk]),
        reverse("backtest:run", args=[backtest.pk]),
        reverse("audit"),
    ], record


def test_anonymous_visitors_are_sent_to_login(client, pages):
    urls, _ = pages
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_staff_without_a_role_may_not_look(login, pages):
    urls, _ = pages
    client = login(username="nobody")
    for url in urls[1:]:  # home only redirects
        assert client.get(url).status_code == 403, url


@pytest.mark.parametrize(
    "roles",
    [("support",), ("ops",), ("compliance",), ()],
    ids=["support", "ops", "compliance", "superuser"],
)
def test_every_role_may_look_at_every_page(login, pages, roles):
    urls, _ = pages
    client = login(*roles, superuser=not roles, username="viewer")
    for url in urls[1:]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"<nav" in response.content  # the full page with the navigation


def test_nav_links_every_page_and_admin_only_for_superusers(login, pages):
    content = login("ops").get(reverse("records:overview")).content.decode()
    for name in ("overview", "users", "sessions", "policies", "rules"):
        assert f'href="{reverse("records:" + name)}"' in content
    for name in ("sweeper:sweeps", "audit"):
        assert f'href="{reverse(name)}"' in content
    assert reverse("admin:index") not in content
    root = login(superuser=True, username="root").get(reverse("records:overview"))
    assert reverse("admin:index") in root.content.decode()


def test_the_nav_marks_the_sweeps_and_rules_pages(login, pages):
    client = login("support")
    for url, label in (
        (reverse("sweeper:sweeps"), "Sweeps"),
        (reverse("records:rules"), "Rules"),
    ):
        content = client.get(url).content.decode()
        assert f'href="{url}" aria-current="page">{label}</a>' in content


def test_no_page_has_inline_script_style_or_event_handlers(login, pages):
    urls, _ = pages
    client = login("ops", "support", "compliance", username="all-roles")
    for url in urls[1:]:
        content = client.get(url).content.decode()
        scripts = re.findall(r"<script(?P<attrs>[^>]*)>", content)
        assert all("src=" in a or 'type="application/json"' in a for a in scripts), url
        assert " style=" not in content and "hx-on" not in content, url
        assert not re.search(r"\son[a-z]+=", content), url
