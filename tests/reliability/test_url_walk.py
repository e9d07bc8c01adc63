"""Every URL, every role: a test that fails when a page is added without a decision.

The dashboard's URL names are enumerated from the resolver; each must appear in PAGES
(GET pages, with the roles that may look) or ACTIONS (POST endpoints, with the roles
that may act). The HTTP API under /api/v1/ takes keys, not logins: tests/api covers it.
"""

from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from api.keys import create_key
from backtest.models import BacktestRun, TuneRun
from erasure import jobs
from erasure.models import ErasureRequest
from memadmin.models import AuditEntry
from records.models import AgentSession, ImportanceRule, MemoryRecord, RetiredSession
from records.policies import policy_for
from sweeper import runs
from sweeper.models import Run, RunKind
from sweeper.tasks import run_inline

from ..records.rows import make_record, make_session

pytestmark = pytest.mark.django_db

ALL = {"support", "ops", "compliance", "superuser"}
ROLES = ("support", "ops", "compliance", "superuser", "norole")
XSS = "<script>alert(1)</script>"


def url_names():
    def walk(patterns, ns=None):
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.namespace in ("admin", "api-v1"):
                    continue
                yield from walk(p.url_patterns, p.namespace or ns)
            elif isinstance(p, URLPattern) and p.name:
                yield f"{ns}:{p.name}" if ns else p.name

    return set(walk(get_resolver().url_patterns))


@pytest.fixture
def world(make_user):
    """One of everything a URL can point at, with markup wherever users write text."""
    app, user = "pharmacy", f"u-{XSS}"
    record = make_record(app, user, content=f"I am allergic to {XSS}")
    session = make_session(
        app,
        user,
        session_id=f"s-{XSS}",
        events=[
            {"id": "e1", "author": "user", "content": {"role": "user", "parts": [{"text": XSS}]}}
        ],
    )
    tomb = RetiredSession.objects.create(
        app_name=app,
        user_id=user,
        session_id=f"old-{XSS}",
        event_count=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        last_update_time=0,
        retired_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    policy_for(app)
    rule = ImportanceRule.objects.create(
        app_name=app, name="courier", pattern=XSS, importance=0.5, category="x"
    )
    plan = run_inline(runs.create_run(RunKind.SWEEP, dry_run=True, enqueue=False))
    key = create_key(app, "agent", timezone.now()).key
    compliance = make_user("carol-x", "compliance")
    req = jobs.submit(
        app_name=app,
        user_id="someone-else",
        user_id_again="someone-else",
        ticket="T-1",
        reason="request",
        requested_by=compliance,
        enqueue_job=False,
    )
    jobs.run(req.pk)  # verified: its receipt can be downloaded
    return {
        "app": app,
        "user": user,
        "record": record,
        "session": session,
        "tomb": tomb,
        "rule": rule,
        "plan": plan,
        "key": key,
        "erasure": req,
        "backtest": BacktestRun.objects.create(app_name=app, days=7, candidate={}),
        "tuning": TuneRun.objects.create(app_name=app, days=7),
    }


def page_urls(w):
    """name -> (url, roles that may GET it)."""
    a, u = w["app"], w["user"]
    return {
        "home": (reverse("home"), None),  # a redirect to the overview for everyone
        "audit": (reverse("audit"), ALL),
        "records:overview": (reverse("records:overview"), ALL),
        "records:users": (reverse("records:users"), ALL),
        "records:user": (reverse("records:user", args=[a, u]), ALL),
        "records:preview": (
            reverse("records:preview", args=[a, u]) + "?ttl_days=365&"
            "half_life_hours=720&max_records=1&max_tokens=40000&w_recency=0.4&"
            "w_frequency=0.2&w_importance=0.4",
            {"ops", "superuser"},
        ),
        "records:sessions": (reverse("records:sessions"), ALL),
        "records:session": (reverse("records:session", args=[w["session"].pk]), ALL),
        "records:retired_session": (reverse("records:retired_session", args=[w["tomb"].pk]), ALL),
        "records:policies": (reverse("records:policies"), ALL),
        "records:policy": (reverse("records:policy", args=[a]), ALL),
        "records:rules": (reverse("records:rules"), ALL),
        "records:rule": (reverse("records:rule", args=[w["rule"].pk]), ALL),
        "sweeper:sweeps": (reverse("sweeper:sweeps"), ALL),
        "sweeper:run": (reverse("sweeper:run", args=[w["plan"].pk]), ALL),
        "backtest:run": (reverse("backtest:run", args=[w["backtest"].pk]), ALL),
        "backtest:tune_run": (reverse("backtest:tune_run", args=[w["tuning"].pk]), ALL),
        "records:embeddings": (reverse("records:embeddings"), ALL),
        "api:keys": (reverse("api:keys"), {"ops", "superuser"}),
        "erasure:list": (reverse("erasure:list"), {"compliance", "superuser"}),
        "erasure:submit": (reverse("erasure:submit"), {"compliance", "superuser"}),
        "erasure:detail": (
            reverse("erasure:detail", args=[w["erasure"].pk]),
            {"compliance", "superuser"},
        ),
    }


def action_urls(w):
    """name -> (url, roles that may POST, a body)."""
    a, u, r = w["app"], w["user"], w["record"].pk
    return {
        "records:pin": (reverse("records:pin", args=[a, u, r]), {"support", "superuser"}, {}),
        "records:unpin": (reverse("records:unpin", args=[a, u, r]), {"support", "superuser"}, {}),
        "records:importance": (
            reverse("records:importance", args=[a, u, r]),
            {"support", "superuser"},
            {"importance": "0.7", "reason": "x"},
        ),
        "records:rule_try": (reverse("records:rule_try"), ALL, {"app": a, "text": "hi"}),
        "records:rule_new": (
            reverse("records:rule_new"),
            {"ops", "superuser"},
            {
                "scope": "app",
                "app_name": a,
                "name": "vip",
                "pattern": "gold",
                "action": "score",
                "importance": "0.7",
                "category": "x",
                "enabled": "on",
            },
        ),
        "records:rule_rescore": (
            reverse("records:rule_rescore"),
            {"ops", "superuser"},
            {"app": a, "note": "x"},
        ),
        "sweeper:start": (
            reverse("sweeper:start"),
            {"ops", "superuser"},
            {"kind": "sweep", "dry_run": "on"},
        ),
        "sweeper:apply": (reverse("sweeper:apply", args=[w["plan"].pk]), {"ops", "superuser"}, {}),
        "backtest:start": (reverse("backtest:start", args=[a]), {"ops", "superuser"}, {}),
        "backtest:tune": (reverse("backtest:tune", args=[a]), {"ops", "superuser"}, {}),
        "records:embeddings_backfill": (
            reverse("records:embeddings_backfill"),
            {"ops", "superuser"},
            {},
        ),
        "api:revoke": (reverse("api:revoke", args=[w["key"].pk]), {"ops", "superuser"}, {}),
        "erasure:reauth": (
            reverse("erasure:reauth"),
            {"compliance", "superuser"},
            {"password": "wrong"},
        ),
        "erasure:retry": (
            reverse("erasure:retry", args=[w["erasure"].pk]),
            {"compliance", "superuser"},
            {},
        ),
        "erasure:receipt": (
            reverse("erasure:receipt", args=[w["erasure"].pk]),
            {"compliance", "superuser"},
            {},
        ),  # a POST download: each one is audited
    }


# No login: health checks, the published receipt keys, and /metrics (its own token or
# network; tests/memadmin).
PUBLIC = {"login", "logout", "healthz", "readyz", "metrics", "receipt_keys"}


def client_for(role, make_user):
    client = Client()
    if role == "superuser":
        client.force_login(make_user("root-x", superuser=True))
    elif role == "norole":
        client.force_login(make_user("nobody-x"))
    else:
        client.force_login(make_user(f"{role}-x", role))
    return client


def test_every_dashboard_url_has_a_decision(world):
    decided = set(page_urls(world)) | set(action_urls(world)) | PUBLIC
    assert url_names() == decided, "add the new URL to PAGES/ACTIONS with its roles"


def test_anonymous_visitors_only_reach_the_login_page(client, world):
    targets = [u for u, _ in page_urls(world).values()]
    targets += [u for u, _, _ in action_urls(world).values()]
    for url in targets:
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("login")), url


@pytest.mark.parametrize("role", ROLES)
def test_each_role_sees_exactly_its_pages(role, world, make_user):
    client = client_for(role, make_user)
    for name, (url, roles) in page_urls(world).items():
        response = client.get(url)
        if roles is None:
            assert response.status_code == 302, name
        elif role in roles:
            assert response.status_code == 200, (name, response.status_code)
        else:
            assert response.status_code == 403, (name, response.status_code)


def counts():
    return {
        "audit": AuditEntry.objects.count(),
        "records": list(MemoryRecord.objects.values_list("id", "pinned", "importance")),
        "runs": Run.objects.count(),
        "erasures": list(ErasureRequest.objects.values_list("id", "status")),
        "rules": ImportanceRule.objects.count(),
        "sessions": AgentSession.objects.count(),
    }


@pytest.mark.parametrize("role", ROLES)
def test_each_role_may_do_exactly_its_actions_and_a_refusal_changes_nothing(role, world, make_user):
    client = client_for(role, make_user)
    for name, (url, roles, body) in action_urls(world).items():
        before = counts()
        response = client.get(url) if body is None else client.post(url, body)
        if role in roles:
            assert response.status_code < 400 or response.status_code in (409, 422), (
                name,
                response.status_code,
            )
        else:
            assert response.status_code == 403, (name, response.status_code)
            assert counts() == before, name


def test_ids_of_another_app_or_user_never_reach_their_records(world, make_user):
    other = make_record("travel", "bob")
    client = client_for("support", make_user)
    a, u = world["app"], world["user"]
    for name in ("records:pin", "records:unpin", "records:importance"):
        for app, user in ((a, u), ("travel", u), (a, "bob")):
            if (app, user) == ("travel", "bob"):
                continue
            url = reverse(name, args=[app, user, other.pk])
            assert client.post(url, {"importance": "0.9", "reason": "x"}).status_code == 404
    other.refresh_from_db()
    assert (other.pinned, other.importance) == (False, 0.5)


def test_markup_in_content_and_ids_renders_as_text_on_every_page(world, make_user):
    client = client_for("superuser", make_user)
    for name, (url, roles) in page_urls(world).items():
        if roles is None:
            continue
        html = client.get(url).content.decode()
        assert XSS not in html, name
    # and the pages that show the text do show it, escaped
    user_page = client.get(page_urls(world)["records:user"][0]).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in user_page


def test_every_post_needs_the_csrf_token(world, make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("root-csrf", superuser=True))
    for name, (url, _, body) in action_urls(world).items():
        if body is None:
            continue
        before = counts()
        assert client.post(url, body).status_code == 403, name
        assert client.post(url, body, headers={"HX-Request": "true"}).status_code == 403, name
        assert counts() == before, name
