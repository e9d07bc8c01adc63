"""Policies: list, edit with validation, impact before saving, confirm, audit, history."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memadmin.models import AuditEntry
from records.models import POLICY_FIELDS, MemoryRecord, Policy, PolicyVersion
from records.policies import policy_for, update_policy
from records.policy import ARTICLE, DEFAULT, PolicyParams, preset
from tests.records.rows import make_records

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def values(policy: Policy, **changes) -> dict:
    data = {}
    for f in POLICY_FIELDS:  # as a browser posts them: a checkbox only when ticked
        value = getattr(policy, f)
        if isinstance(value, bool):
            if value:
                data[f] = "on"
        else:
            data[f] = value
    data["note"] = "tighter caps"
    data.update(changes)
    return data


@pytest.fixture
def pharmacy():
    policy = policy_for("pharmacy")
    make_records("pharmacy", "alice", 6)
    make_records("pharmacy", "bob", 5)
    make_records("pharmacy", "carol", 2)
    return policy


def url(app="pharmacy"):
    return reverse("records:policy", args=[app])


def test_policies_list_every_app(login, pharmacy):
    policy_for("travel")
    response = login("support").get(reverse("records:policies"))
    assert [p.app_name for p in response.context["policies"]] == ["pharmacy", "travel"]
    assert url() in response.content.decode()


def test_review_shows_the_impact_and_saves_nothing(login, pharmacy):
    client = login("ops")
    response = client.post(url(), values(pharmacy, max_records=4, step="review"), headers=HX)
    assert response.status_code == 200
    review = response.context["review"]
    assert (review["impact"].records, review["impact"].users) == (3, 2)
    assert review["baseline"].records == 0
    content = response.content.decode()
    assert "What this change itself causes: <strong>3</strong> records more evicted" in content
    assert "Already due at the next enforcement, with or without this change: 0 records" in content
    assert "evicts 3 records across 2 users (30 tokens) in all: 3 record cap." in content
    assert 'name="step" value="confirm"' in content and 'name="base_version" value="1"' in content
    assert Policy.objects.get(app_name="pharmacy").version == 1
    assert MemoryRecord.objects.count() == 13
    assert not AuditEntry.objects.exists()


def test_review_splits_what_the_change_causes_from_what_is_already_due(login, pharmacy):
    update_policy("pharmacy", {"max_records": 5})  # alice (6) is over already: 1 due
    client = login("ops")
    data = values(Policy.objects.get(app_name="pharmacy"), max_records=3, step="review")
    content = client.post(url(), data, headers=HX).content.decode()
    # 3 + 2 with the new cap of 3; 1 of them due anyway with the current cap of 5
    assert "What this change itself causes: <strong>4</strong> records more evicted" in content
    assert (
        "Already due at the next enforcement, with or without this change: "
        "1 record across 1 user (the current values)." in content
    )
    assert "evicts 5 records across 2 users" in content
    # raising the cap: fewer than already due
    data = values(Policy.objects.get(app_name="pharmacy"), max_records=6, step="review")
    content = client.post(url(), data, headers=HX).content.decode()
    assert "<strong>1</strong> record fewer evicted at the next enforcement" in content


def test_confirm_saves_a_version_with_an_audit_entry(login, pharmacy):
    client = login("ops", username="olga")
    data = values(pharmacy, max_records=4, step="confirm", base_version=1)
    response = client.post(url(), data, headers=HX)
    assert response.status_code == 200
    assert "Saved pharmacy policy version 2" in response.content.decode()
    policy = Policy.objects.get(app_name="pharmacy")
    assert (policy.version, policy.max_records, policy.updated_by.username) == (2, 4, "olga")
    assert PolicyVersion.objects.get(app_name="pharmacy", version=2).note == "tighter caps"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.app_name) == ("policy.update", "pharmacy")
    assert entry.actor_username == "olga"
    assert entry.before == {"version": 1, "max_records": 500}
    assert entry.after == {"version": 2, "max_records": 4}
    assert entry.reason == "tighter caps"
    # the history shows the diff to the version before
    history = response.context["history"].object_list
    assert history[0].changes == [("max_records", 500, 4)]
    assert MemoryRecord.objects.count() == 13  # saving a policy evicts nothing by itself


def test_new_apps_get_the_default_preset_and_the_pages_say_so(login, pharmacy):
    assert pharmacy.preset == DEFAULT
    assert pharmacy.params() == PolicyParams()
    client = login("support")
    assert "<td>default</td>" in client.get(reverse("records:policies")).content.decode()
    update_policy("pharmacy", {"w_recency": 0.6, "w_importance": 0.4})
    assert "<td>custom</td>" in client.get(reverse("records:policies")).content.decode()


def test_choosing_a_preset_reviews_then_saves_its_values_with_an_audit_entry(login, pharmacy):
    update_policy("pharmacy", {"max_records": 300})  # the app's own cap stays
    pharmacy.refresh_from_db()
    client = login("ops", username="olga")
    data = values(pharmacy, preset=ARTICLE, step="review", note="compare with the article")
    review = client.post(url(), data, headers=HX).context["review"]
    assert {name for name, _, _ in review["changes"]} == {
        "Recency weight",
        "Frequency weight",
        "Importance weight",
        "Fresh start (half-lives)",
        "Past-due half-life (hours)",
        "Newer statements supersede older",
        "Importance from information (unmatched text)",
    }
    response = client.post(url(), {**data, "step": "confirm", "base_version": 2}, headers=HX)
    assert response.status_code == 200
    policy = Policy.objects.get(app_name="pharmacy")
    assert policy.preset == ARTICLE and policy.version == 3
    assert policy.params() == preset(ARTICLE, PolicyParams(max_records=300))
    entry = AuditEntry.objects.get()
    assert entry.after == {
        "version": 3,
        "preset": ARTICLE,
        "w_recency": 0.4,
        "w_frequency": 0.2,
        "w_importance": 0.4,
        "fresh_start": 1.0,
        "past_due_half_life_hours": 0.0,
        "supersede": False,
        "information_importance": False,
    }
    assert PolicyVersion.objects.get(app_name="pharmacy", version=3).values["fresh_start"] == 1.0


def test_an_unknown_preset_is_refused_with_the_choices(login, pharmacy):
    data = values(pharmacy, preset="lru", step="review")
    response = login("ops").post(url(), data, headers=HX)
    assert response.status_code == 422
    assert "lru is not a preset; choose one of default, article." in response.content.decode()


def test_confirm_without_javascript_redirects(login, pharmacy):
    data = values(pharmacy, max_tokens=9000, step="confirm", base_version=1)
    response = login("ops").post(url(), data)
    assert response.status_code == 302 and response["Location"] == url()
    assert Policy.objects.get(app_name="pharmacy").max_tokens == 9000


def test_confirm_against_a_changed_policy_asks_again(login, pharmacy):
    update_policy("pharmacy", {"ttl_days": 100})  # someone else, meanwhile
    data = values(pharmacy, max_records=4, step="confirm", base_version=1)
    response = login("ops").post(url(), data, headers=HX)
    assert response.status_code == 409
    assert "Someone saved version 2 meanwhile" in response.content.decode()
    assert response.context["review"]["base_version"] == 2
    assert Policy.objects.get(app_name="pharmacy").version == 2
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"w_recency": 0.9}, "Weights must sum to 1 (they sum to 1.4000)."),
        ({"max_records": 0}, "Max records must be at least 1."),
        ({"half_life_hours": 0}, "Half-life must be positive."),
        # the what-if preview's sentences, for the same values (policy.LIMITS)
        ({"ttl_days": 1000000000000}, "TTL must be at most 36500 days (a century)."),
        ({"half_life_hours": "1e300"}, "Half-life must be at most 876000 hours (a century)."),
        ({"max_tokens": 10**12}, "Max tokens must be at most 1000000000."),
        ({"session_idle_days": 2**31 - 1}, "Session idle threshold must be at most 36500 days"),
        ({"note": ""}, "Say why the policy changes"),
        ({}, "Nothing changed"),
    ],
)
def test_bad_values_are_refused_with_messages(login, pharmacy, change, message):
    data = values(pharmacy, step="confirm", base_version=1, **change)
    response = login("ops").post(url(), data, headers=HX)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert Policy.objects.get(app_name="pharmacy").version == 1
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("roles", [("support",), ("compliance",)])
def test_only_ops_may_change_a_policy(login, pharmacy, roles):
    client = login(*roles)
    page = client.get(url())
    assert page.status_code == 200 and page.context["form"] is None
    assert b"Review impact" not in page.content
    data = values(pharmacy, max_records=4, step="confirm", base_version=1)
    assert client.post(url(), data).status_code == 403
    assert Policy.objects.get(app_name="pharmacy").version == 1
    assert not AuditEntry.objects.exists()


def test_ops_create_a_new_apps_policy_from_the_list(login):
    client = login("ops", username="olga")
    page = client.get(reverse("records:policies"))
    assert b"Add an app" in page.content and b"csrfmiddlewaretoken" in page.content

    response = client.post(
        reverse("records:policies"), {"app_name": "travel", "reason": "new agent"}, follow=True
    )

    assert response.redirect_chain[-1][0] == url("travel")
    assert "Created the travel policy" in response.content.decode()
    assert Policy.objects.get(app_name="travel").version == 1
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username, entry.reason) == (
        "policy.create",
        "olga",
        "new agent",
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [("a/b", "without &#x27;/&#x27;"), ("pharmacy", "has a policy already"), ("", "required")],
)
def test_creating_a_policy_refuses_bad_or_taken_names(login, pharmacy, name, message):
    response = login("ops").post(reverse("records:policies"), {"app_name": name})
    assert response.status_code == 422
    assert message in response.content.decode()
    assert list(Policy.objects.values_list("app_name", flat=True)) == ["pharmacy"]
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("roles", [("support",), ("compliance",)])
def test_only_ops_may_create_a_policy(login, roles):
    client = login(*roles)
    assert b"Add an app" not in client.get(reverse("records:policies")).content
    assert client.post(reverse("records:policies"), {"app_name": "travel"}).status_code == 403
    assert not Policy.objects.exists()


def test_an_app_with_sessions_but_no_policy_has_a_page_with_the_defaults(login):
    from records import sessions

    sessions.create_session(app_name="travel", user_id="u", session_id="s")
    page = login("ops").get(url("travel"))
    assert page.status_code == 200 and page.context["policy"].pk is None
    assert not Policy.objects.exists()


def test_unknown_app_is_404_and_creates_nothing(login):
    assert login("ops").get(url("nope")).status_code == 404
    assert not Policy.objects.filter(app_name="nope").exists()


def test_policy_page_queries_do_not_grow_with_history_or_records(login, pharmacy):
    client = login("ops")

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url()).status_code == 200
        return len(ctx.captured_queries)

    small = count()
    for i in range(40):
        update_policy("pharmacy", {"max_records": 100 + i})
    make_records("pharmacy", "dave", 300)
    assert count() == small
