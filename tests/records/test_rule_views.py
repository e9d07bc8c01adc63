"""The Rules page: defaults, staff rules, effective rules per app, try it, re-score."""

import re

import pytest
from django.urls import reverse

from memadmin.models import AuditEntry
from records import rules as pure_rules
from records.models import ImportanceRule, ImportanceSource, MemoryRecord
from records.policies import policy_for
from records.store import active_rules
from records.tasks import rescore_app
from tests.records.rows import make_record

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}
APP = "pharmacy"
RULES = reverse("records:rules")
NEW = reverse("records:rule_new")
TRY = reverse("records:rule_try")
RESCORE = reverse("records:rule_rescore")


def rule_data(**changes):
    data = {
        "app_name": APP,
        "name": "loyalty",
        "pattern": r"\bgold member\b",
        "action": "score",
        "importance": "0.7",
        "category": "identity",
        "enabled": "on",
        "note": "support asked for it",
    }
    data.update(changes)
    data.setdefault("scope", "app" if data.get("app_name") else "all")
    return {k: v for k, v in data.items() if v is not None}


def names(app):
    return [r.name for r in active_rules(app)]


@pytest.fixture
def courier():
    policy_for(APP)
    return ImportanceRule.objects.create(
        app_name="", name="courier", pattern=r"\bcourier\b", importance=0.3, category="other"
    )


# --- access ---------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_login(client, courier):
    for url in (RULES, reverse("records:rule", args=[courier.pk])):
        assert client.get(url)["Location"].startswith(reverse("login"))
    for url in (NEW, TRY, RESCORE, reverse("records:rule", args=[courier.pk])):
        response = client.post(url, rule_data())
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert ImportanceRule.objects.count() == 1 and not AuditEntry.objects.exists()


@pytest.mark.parametrize("role", ["support", "compliance"])
def test_every_role_looks_but_only_ops_changes_rules(login, courier, role):
    make_record(APP, "alice", content="the courier was late")
    client = login(role)
    page = client.get(RULES)
    assert page.status_code == 200
    content = page.content.decode()
    assert "allergy" in content and "courier" in content and "Add a rule" not in content
    assert client.get(reverse("records:rule", args=[courier.pk])).status_code == 200

    assert client.post(NEW, rule_data()).status_code == 403
    edit = reverse("records:rule", args=[courier.pk])
    assert client.post(edit, rule_data(name="courier", app_name="")).status_code == 403
    assert client.post(RESCORE, {"app": APP, "step": "confirm"}).status_code == 403
    assert list(ImportanceRule.objects.values_list("name", "importance")) == [("courier", 0.3)]
    assert not AuditEntry.objects.exists()
    # trying rules changes nothing, so every role may
    assert client.post(TRY, {"app": APP, "text": "the courier"}).status_code == 200


def test_staff_without_a_role_may_not_look(login, courier):
    client = login(username="nobody")
    assert client.get(RULES).status_code == 403
    assert client.post(TRY, {"app": APP, "text": "hi"}).status_code == 403


# --- what the page shows -------------------------------------------------------------------


def test_the_page_shows_defaults_staff_rules_and_the_effective_set_per_app(login, courier):
    ImportanceRule.objects.create(
        app_name=APP, name="complaint", pattern="x", action="score", importance=0.1, enabled=False
    )
    ImportanceRule.objects.create(
        app_name=APP, name="allergy", pattern=r"\ballerg", importance=1.0, pin=True
    )
    response = login("ops").get(RULES, {"app": APP})
    content = response.content.decode()
    assert "new records only" in content and "never removes a pin" in content
    effective = response.context["effective"]
    assert [e.rule.name for e in effective.rules] == names(APP)
    by_name = {e.rule.name: e for e in effective.rules}
    assert by_name["allergy"].source == "this app" and by_name["allergy"].replaces_default
    assert by_name["allergy"].rule.importance == 1.0
    assert by_name["courier"].source == "all apps" and not by_name["courier"].replaces_default
    assert by_name["medication"].source == "shipped default"
    assert "complaint" not in by_name
    assert [r.name for r in effective.switched_off] == ["complaint"]
    assert "Switched off here" in content
    assert len(response.context["defaults"]) == len(pure_rules.DEFAULT_RULES)

    # the app picker swaps the effective rules only
    other = login("ops", username="ops2").get(RULES, {"app": ""}, headers=HX)
    partial = other.content.decode()
    assert "<nav" not in partial and partial.lstrip().startswith('<div id="effective"')
    assert "any app without rules of its own" in partial
    assert [e.rule.name for e in other.context["effective"].rules] == names("")


def test_rule_patterns_are_shown_as_text(login):
    ImportanceRule.objects.create(
        app_name=APP, name="markup", pattern=r"<script>alert\(1\)</script>", importance=0.5
    )
    content = login("support").get(RULES, {"app": APP}).content.decode()
    assert "&lt;script&gt;alert" in content and "<script>alert" not in content


# --- adding and changing rules -----------------------------------------------------------


def test_ops_adds_a_rule_it_changes_the_effective_rules_and_is_audited(login):
    policy_for(APP)
    assert "loyalty" not in names(APP)
    client = login("ops", username="olga")
    response = client.post(NEW, rule_data())
    assert response.status_code == 302
    assert response["Location"] == f"{RULES}?app={APP}"
    rule = ImportanceRule.objects.get()
    assert (rule.name, rule.importance, rule.updated_by.username) == ("loyalty", 0.7, "olga")
    assert "loyalty" in names(APP) and "loyalty" not in names("travel")
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username, entry.app_name, entry.target) == (
        "rule.change",
        "olga",
        APP,
        "loyalty",
    )
    assert entry.before is None and entry.reason == "support asked for it"
    assert entry.after["pattern"] == r"\bgold member\b" and entry.after["importance"] == 0.7
    page = client.get(response["Location"]).content.decode()
    assert "Saved rule loyalty for app pharmacy" in page and "re-score the app" in page


def test_the_add_form_makes_the_scope_an_explicit_choice(login, courier):
    make_record(APP, "alice", content="hello")
    content = login("ops").get(RULES, {"app": APP}).content.decode()
    form = content[content.index('<form class="rule-form"') :]
    form = form[: form.index("</form>")]
    assert "<legend>Applies to</legend>" in form
    radios = re.findall(r'<input type="radio" name="scope"[^>]*>', form)
    assert len(radios) == 2 and 'value="all"' in radios[0] and 'value="app"' in radios[1]
    assert not any("checked" in r for r in radios)  # neither scope chosen for the user
    assert f'value="{APP}"' not in form.split("<datalist")[0]  # the viewed app not filled in


@pytest.mark.parametrize(
    ("scope", "app_name", "message"),
    [
        (None, APP, "Choose whether the rule applies to every app or one app."),
        ("app", "", "Name the app this rule is for, or choose every app."),
        ("all", APP, "Every app was chosen, yet &#x27;pharmacy&#x27; is named"),
    ],
)
def test_a_rule_without_a_clear_scope_is_refused(login, scope, app_name, message):
    policy_for(APP)
    data = rule_data(app_name=app_name)
    if scope is None:
        del data["scope"]
    else:
        data["scope"] = scope
    response = login("ops").post(NEW, data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ImportanceRule.objects.exists() and not AuditEntry.objects.exists()


def test_every_app_is_a_scope_of_its_own(login):
    policy_for(APP)
    response = login("ops").post(NEW, rule_data(scope="all", app_name=""))
    assert response.status_code == 302
    assert ImportanceRule.objects.get().app_name == ""


def test_editing_a_rule_shows_its_own_scope(login, courier):
    content = login("ops").get(reverse("records:rule", args=[courier.pk])).content.decode()
    radios = re.findall(r'<input type="radio" name="scope"[^>]*>', content)
    assert ["checked" in r for r in radios] == [True, False]  # every app, as it is


def test_a_regex_that_does_not_compile_is_refused_with_a_message(login):
    response = login("ops").post(NEW, rule_data(pattern="(unclosed"))
    assert response.status_code == 422
    content = response.content.decode()
    assert (
        "Pattern is not a valid regular expression for the rule engine (RE2): missing ): "
        "(unclosed." in content
    )
    form = response.context["form"]
    assert form.errors["pattern"]
    assert not ImportanceRule.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(\w+) \1", "Backreferences such as \\1 are not supported: the rule engine (RE2) never"),
        (r"gold(?= member)", "Lookahead and lookbehind ((?=…) are not supported"),
        (r"(a+)++", "Possessive quantifiers such as ++ are not needed"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_saying_why_and_what_to_write(login, pattern, message):
    response = login("ops").post(NEW, rule_data(pattern=pattern))
    assert response.status_code == 422
    assert any(message in e for e in response.context["form"].errors["pattern"])
    assert not ImportanceRule.objects.exists() and not AuditEntry.objects.exists()


def test_a_stored_rule_re2_cannot_run_is_shown_as_skipped_with_the_reason(login, courier):
    stored = ImportanceRule.objects.create(  # the ORM does not validate: an old row
        app_name=APP, name="lookbehind", pattern=r"(?<!not )gold", importance=0.9
    )
    client = login("support")
    page = client.get(RULES, {"app": APP}).content.decode()
    assert "Skipped because they do not validate" in page
    assert "lookahead and lookbehind ((?&lt;!…) are not supported" in page
    effective = client.get(RULES, {"app": APP}).context["effective"]
    assert [s.row for s in effective.invalid] == [stored]
    assert "lookbehind" not in [e.rule.name for e in effective.rules]
    detail = client.get(reverse("records:rule", args=[stored.pk])).content.decode()
    assert "This rule is skipped until it is fixed: lookahead and lookbehind" in detail
    tried = client.post(TRY, {"app": APP, "text": "the courier has gold"}, headers=HX)
    assert tried.status_code == 200 and "by rule <code>courier</code>" in tried.content.decode()


def test_try_it_answers_at_once_on_text_that_stalled_python_re(login):
    response = login("support").post(TRY, {"app": "", "text": "@" * 4000}, headers=HX)
    assert response.status_code == 200
    assert "No rule matches" in response.content.decode()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "bad name!"}, "name", "Name must be 1-64 letters"),
        ({"importance": ""}, "importance", "A score rule needs an importance between 0 and 1."),
        ({"importance": "1.5"}, "importance", "Importance must be a number from 0 to 1."),
        ({"action": "drop", "pin": "on", "importance": ""}, "pin", "A drop rule cannot pin."),
        ({"note": ""}, "note", "Say why the rule changes"),
    ],
)
def test_other_bad_rules_say_what_is_wrong_next_to_the_field(login, changes, field, message):
    response = login("ops").post(NEW, rule_data(**changes))
    assert response.status_code == 422
    assert any(message in e for e in response.context["form"].errors[field])
    assert not ImportanceRule.objects.exists() and not AuditEntry.objects.exists()


def test_a_second_rule_of_the_same_name_for_the_same_app_is_refused(login, courier):
    response = login("ops").post(NEW, rule_data(app_name="", name="courier"))
    assert response.status_code == 422
    assert "There is already a rule named &#x27;courier&#x27; for every app" in (
        response.content.decode()
    )
    assert ImportanceRule.objects.count() == 1 and not AuditEntry.objects.exists()


def test_ops_edits_and_disables_a_rule(login, courier):
    client = login("ops", username="olga")
    url = reverse("records:rule", args=[courier.pk])
    form_page = client.get(url)
    assert form_page.context["form"].instance == courier
    data = rule_data(
        app_name="", name="courier", pattern=r"\bcourier\b", importance="0.4", category="other"
    )
    assert client.post(url, data).status_code == 302
    courier.refresh_from_db()
    assert courier.importance == 0.4
    entry = AuditEntry.objects.get()
    assert (entry.before["importance"], entry.after["importance"]) == (0.3, 0.4)

    del data["enabled"]  # an unchecked checkbox
    assert client.post(url, data).status_code == 302
    assert "courier" not in names(APP)
    assert AuditEntry.objects.count() == 2
    assert AuditEntry.objects.latest("id").after["enabled"] is False
    # saving without a change writes no audit entry
    assert client.post(url, data).status_code == 302
    assert AuditEntry.objects.count() == 2


def test_a_refused_edit_shows_the_stored_rule_beside_the_typed_values(login, courier):
    client = login("ops", username="olga")
    url = reverse("records:rule", args=[courier.pk])
    data = rule_data(app_name="", name="renamed-but-invalid", pattern="(a", category="other")
    response = client.post(url, data)
    assert response.status_code == 422
    page = response.content.decode()
    assert "<h1>courier " in page  # the heading names the rule as stored
    assert response.context["form"]["name"].value() == "renamed-but-invalid"  # kept to fix
    courier.refresh_from_db()
    assert courier.name == "courier"


def test_switching_a_default_off_for_one_app(login):
    policy_for(APP)
    client = login("ops")
    prefilled = client.get(RULES, {"app": APP, "from": "complaint", "enabled": "0"})
    initial = prefilled.context["form"].initial
    assert initial["pattern"] == next(
        r.pattern for r in pure_rules.DEFAULT_RULES if r.name == "complaint"
    )
    assert initial["enabled"] is False
    data = rule_data(
        name="complaint", pattern=initial["pattern"], importance="0.5", category="complaint"
    )
    del data["enabled"]
    assert client.post(NEW, data).status_code == 302
    assert "complaint" not in names(APP) and "complaint" in names("travel")


def test_a_long_pattern_is_audited_by_length_and_digest(login):
    long_pattern = "|".join(f"word{i}" for i in range(80))
    assert len(long_pattern) > 256
    policy_for(APP)
    assert login("ops").post(NEW, rule_data(pattern=long_pattern)).status_code == 302
    after = AuditEntry.objects.get().after
    assert after["pattern"].startswith(f"{len(long_pattern)} characters, sha256 ")


# --- try it ---------------------------------------------------------------------------------


def test_try_it_decides_with_the_effective_rules_without_saving(login, courier):
    ImportanceRule.objects.create(
        app_name=APP, name="loyalty", pattern=r"\bgold member\b", importance=0.7, pin=True
    )
    client = login("support")
    before = (ImportanceRule.objects.count(), MemoryRecord.objects.count())
    response = client.post(TRY, {"app": APP, "text": "I am a gold member"}, headers=HX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="try-result"')
    assert "importance <strong>0.7</strong> by rule <code>loyalty</code>" in content
    assert "pinned" in content and "Nothing was stored" in content
    other_app = client.post(TRY, {"app": "travel", "text": "I am a gold member"}, headers=HX)
    assert "No rule matches: importance 0.2" in other_app.content.decode()
    small_talk = client.post(TRY, {"app": APP, "text": "thanks, bye!"}, headers=HX)
    assert "rule <code>small-talk</code> matches the whole text" in small_talk.content.decode()
    assert (ImportanceRule.objects.count(), MemoryRecord.objects.count()) == before
    assert not AuditEntry.objects.exists()


def test_try_it_without_javascript_shows_the_whole_page_and_escapes_the_sample(login):
    response = login("support").post(TRY, {"app": "", "text": "<b>I'm allergic</b> to latex"})
    content = response.content.decode()
    assert "<nav" in content and "by rule <code>allergy</code>" in content
    assert "&lt;b&gt;I&#x27;m allergic&lt;/b&gt;" in content and "<b>I'm" not in content
    empty = login("support", username="s2").post(TRY, {"app": "", "text": ""}, headers=HX)
    assert empty.status_code == 422 and "Type a sample text" in empty.content.decode()


# --- re-score --------------------------------------------------------------------------------


@pytest.fixture
def scored_records(courier):
    late = make_record(APP, "alice", content="the courier was late", importance=0.2)
    staff_set = make_record(
        APP,
        "alice",
        content="the courier rang twice",
        importance=0.9,
        importance_source=ImportanceSource.STAFF,
    )
    pinned = make_record(APP, "bob", content="courier at the back door", pinned=True)
    return late, staff_set, pinned


def test_rescore_is_confirmed_then_queued_and_audited(
    login, scored_records, django_capture_on_commit_callbacks
):
    client = login("ops", username="olga")
    review = client.post(RESCORE, {"app": APP, "step": "review"})
    assert review.status_code == 200
    content = review.content.decode()
    assert "to the <strong>3</strong> existing records of pharmacy" in content
    assert "1 of them have importance set by staff or by the calling agent" in content
    assert "No pin is removed (1 pinned now)" in content
    assert not AuditEntry.objects.exists()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(RESCORE, {"app": APP, "step": "confirm", "note": "new rule"})
    assert response.status_code == 302
    assert len(callbacks) == 1  # the task is sent after the commit (not run here)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_username, entry.app_name, entry.reason) == (
        "records.rescore",
        "olga",
        APP,
        "new rule",
    )
    assert entry.before == {"records": 3, "kept": 1, "pinned": 1}
    assert entry.after["rules"] == names(APP)
    late = scored_records[0]
    late.refresh_from_db()
    assert late.importance == 0.2  # nothing changes until the task runs


def test_rescore_of_an_app_without_records_says_so(login):
    response = login("ops").post(RESCORE, {"app": "travel", "step": "confirm"}, follow=True)
    assert "App travel has no records to re-score." in response.content.decode()
    assert not AuditEntry.objects.exists()


def test_rules_and_rescore_address_the_app_exactly_as_named(
    login, django_capture_on_commit_callbacks
):
    """An agent may name its app "pharmacy " beside "pharmacy": a rule or a re-score of
    the one is not the other's (the names were stripped, so they were)."""
    spaced = APP + " "
    make_record(spaced, "u1", content="a note")
    make_record(APP, "u2", content="another note")
    client = login("ops")
    assert client.post(NEW, rule_data(app_name=spaced)).status_code == 302
    assert ImportanceRule.objects.get().app_name == spaced
    # an app no agent writes to (a stray space) is refused, not given a rule that never applies
    unknown = client.post(NEW, rule_data(app_name=APP + "  ", name="other"))
    assert unknown.status_code == 422 and "No app named" in unknown.content.decode()
    assert ImportanceRule.objects.count() == 1
    review = client.post(RESCORE, {"app": spaced, "step": "review"})
    assert "<strong>1</strong> existing record of pharmacy ?" in review.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        client.post(RESCORE, {"app": spaced, "step": "confirm", "note": "n"})
    assert AuditEntry.objects.get(action="records.rescore").app_name == spaced
    blank = client.post(RESCORE, {"app": "  ", "step": "confirm"}, follow=True)
    assert "Choose the app to re-score." in blank.content.decode()
    assert AuditEntry.objects.filter(action="records.rescore").count() == 1


def test_the_rescore_task_applies_the_current_rules(scored_records):
    late, staff_set, pinned = scored_records
    ImportanceRule.objects.filter(name="courier").update(importance=0.35)
    assert rescore_app(APP) == 2
    late.refresh_from_db()
    staff_set.refresh_from_db()
    pinned.refresh_from_db()
    assert (late.importance, late.importance_rule, late.importance_source) == (
        0.35,
        "courier",
        ImportanceSource.RULE,
    )
    assert staff_set.importance == 0.9  # staff-set importance is kept
    assert pinned.pinned and pinned.importance == 0.35  # re-scored, still pinned
    assert rescore_app(APP) == 0  # idempotent
