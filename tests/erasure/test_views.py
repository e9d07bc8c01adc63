"""Erasure pages: compliance only, fresh password, CSRF, htmx progress, receipts."""

import json
import re
import time
from pathlib import Path

import pytest
from django.test import Client

from erasure import jobs
from erasure.models import ErasureAuditEntry, ErasureRequest
from erasure.reauth import SESSION_KEY
from records.policies import policy_for

from .conftest import populate
from .helpers import USER, erase, submit

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "erasure"
FORM = {
    "scope": "app",
    "app_name": "pharmacy",
    "user_id": USER,
    "user_id_again": USER,
    "ticket": "DSR-2002",
    "reason": "Subject asked for erasure through the support portal",
}


@pytest.fixture(autouse=True)
def pharmacy_is_known(db):
    policy_for(FORM["app_name"])


def urls(pk):
    return [
        "/erasure/",
        "/erasure/new/",
        "/erasure/confirm-password/",
        f"/erasure/{pk}/",
        f"/erasure/{pk}/receipt.json",
    ]


@pytest.mark.parametrize("role", ["support", "ops", None])
def test_other_roles_get_403_and_change_nothing(login, role):
    req = erase("pharmacy")
    entries = ErasureAuditEntry.objects.count()
    client = login(role) if role else login()
    for url in urls(req.pk):
        assert client.get(url).status_code == 403, url
    assert client.post("/erasure/new/", FORM).status_code == 403
    assert client.post(f"/erasure/{req.pk}/retry/").status_code == 403
    assert (
        client.post("/erasure/confirm-password/", {"password": "pw-Secret-123"}).status_code == 403
    )
    assert ErasureRequest.objects.count() == 1
    assert ErasureAuditEntry.objects.count() == entries


def test_anonymous_is_sent_to_login(client):
    response = client.get("/erasure/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_submitting_needs_a_recent_password_check(login):
    client = login("compliance")
    session = client.session
    session[SESSION_KEY] = time.time() - 3600  # logged in an hour ago
    session.save()

    reauth = "/erasure/confirm-password/?next=/erasure/new/"
    assert client.get("/erasure/new/")["Location"] == reauth
    # The check lapsed while the form was filled in: the password is asked for on the
    # same page, and what was typed stays in it.
    response = client.post("/erasure/new/", FORM)
    page = response.content.decode()
    assert response.status_code == 403 and 'name="password"' in page
    assert FORM["ticket"] in page and "nothing was submitted" in page
    wrong_here = client.post("/erasure/new/", {**FORM, "password": "nope"})
    assert wrong_here.status_code == 403 and "not your password" in wrong_here.content.decode()
    assert not ErasureRequest.objects.exists()

    wrong = client.post("/erasure/confirm-password/", {"password": "nope", "next": "/erasure/new/"})
    assert wrong.status_code == 200 and "not your password" in wrong.content.decode()
    offsite = client.post(
        "/erasure/confirm-password/", {"password": "pw-Secret-123", "next": "https://evil.example/"}
    )
    assert offsite["Location"] == "/erasure/"
    right = client.post(
        "/erasure/confirm-password/", {"password": "pw-Secret-123", "next": "/erasure/new/"}
    )
    assert right["Location"] == "/erasure/new/"
    assert client.get("/erasure/new/").status_code == 200


def test_the_password_given_with_the_form_submits_it(login):
    client = login("compliance")
    session = client.session
    session[SESSION_KEY] = time.time() - 3600
    session.save()
    response = client.post("/erasure/new/", {**FORM, "password": "pw-Secret-123"})
    assert response.status_code == 302
    req = ErasureRequest.objects.get()
    assert response["Location"] == f"/erasure/{req.pk}/"
    assert client.get("/erasure/new/").status_code == 200  # the check is fresh again


def test_the_user_id_must_be_typed_twice_the_same(login):
    client = login("compliance")
    response = client.post("/erasure/new/", {**FORM, "user_id_again": USER + " "})
    assert response.status_code == 200
    assert "does not match" in response.content.decode()
    assert not ErasureRequest.objects.exists()


def test_an_app_memadmin_has_never_seen_is_refused_with_the_known_ones(login):
    client = login("compliance")
    response = client.post("/erasure/new/", {**FORM, "app_name": "pharmacie"})
    content = response.content.decode()
    assert response.status_code == 200
    assert "No app named &#x27;pharmacie&#x27;" in content
    assert "known apps: pharmacy" in content
    assert '<option value="pharmacy">' in content  # the datalist offers the known ones
    assert not ErasureRequest.objects.exists()


def test_the_app_is_addressed_exactly_as_named(login):
    """An agent may name its app "pharmacy " beside "pharmacy": erasing the one must not
    erase in the other (the name was stripped, so it did)."""
    policy_for("pharmacy ")
    client = login("compliance")
    assert client.post("/erasure/new/", {**FORM, "app_name": "pharmacy "}).status_code == 302
    assert ErasureRequest.objects.get().app_name == "pharmacy "
    blank = client.post("/erasure/new/", {**FORM, "app_name": "   "})
    assert "Name the app, or choose all apps." in blank.content.decode()
    assert ErasureRequest.objects.count() == 1


def test_a_reason_naming_the_user_is_refused(login):
    client = login("compliance")
    response = client.post("/erasure/new/", {**FORM, "reason": f"user {USER} asked"})
    assert "must not contain the user id" in response.content.decode()
    assert not ErasureRequest.objects.exists()


def test_submitting_creates_the_request_and_never_echoes_the_user_id(login):
    client = login("compliance", username="carol")
    response = client.post("/erasure/new/", FORM, follow=True)
    req = ErasureRequest.objects.get()
    assert response.redirect_chain[-1][0] == f"/erasure/{req.pk}/"
    assert (req.app_name, req.user_id, req.requested_by_name) == ("pharmacy", USER, "carol")
    assert [str(m) for m in response.context["messages"]] == [f"Erasure #{req.pk} submitted."]
    assert client.post("/erasure/new/", {**FORM, "scope": "all", "app_name": ""}).status_code == 302
    assert ErasureRequest.objects.filter(app_name="").count() == 1
    # the staff audit log has the submission, naming the request, never the subject
    from memadmin.models import AuditEntry

    entry = AuditEntry.objects.filter(action="erasure.submit").order_by("id").first()
    assert (entry.actor_username, entry.target, entry.user_id) == (
        "carol",
        f"erasure #{req.pk}",
        "",
    )
    assert USER not in str(entry.after)


def test_every_post_needs_the_csrf_token(make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("carol", "compliance"))
    assert client.post("/erasure/new/", FORM).status_code == 403
    assert client.post("/erasure/confirm-password/", {"password": "x"}).status_code == 403
    assert not ErasureRequest.objects.exists()


def test_progress_is_a_polled_partial_until_the_request_is_finished(login):
    client = login("compliance")
    populate("pharmacy", USER, "mk1x9q")
    req = submit("pharmacy")
    page = client.get(f"/erasure/{req.pk}/").content.decode()
    assert "<html" in page and 'hx-trigger="every 2s"' in page
    partial = client.get(f"/erasure/{req.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and 'hx-trigger="every 2s"' in partial
    assert USER in page  # shown to compliance while the job runs

    jobs.run(req.pk)
    done = client.get(f"/erasure/{req.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in done
    assert f"/erasure/{req.pk}/receipt.json" in done
    assert "memory records and summaries" in done
    assert USER not in client.get(f"/erasure/{req.pk}/").content.decode()  # cleared


def test_the_page_names_stores_for_people_and_tells_the_audit_in_sentences(login):
    client = login("compliance")
    populate("pharmacy", USER, "mk1x9q")
    req = erase("pharmacy")
    page = client.get(f"/erasure/{req.pk}/").content.decode()
    for label in ("records.MemoryRecord", "records.UserMemoryStats", "redis:touch buffer"):
        assert label not in page  # no model label, anywhere on the page
    for name in ("memory records and summaries", "per-user totals", "touch buffer (Redis)"):
        assert f"<td>{name}</td>" in page
    # the "completed" row: a sentence of counts, not a Python dict
    completed = req.audit.get(action="completed")
    records = completed.detail["deleted"]["records.MemoryRecord"]
    assert records > 0
    assert re.search(
        rf"<td class=\"content\">Deleted [^<]*\b{records} memory records and summaries", page
    )
    assert "{&#x27;" not in page and "{'" not in page
    # the stored entry and the receipt keep their machine-readable labels
    assert "records.MemoryRecord" in completed.detail["deleted"]
    assert any(s["store"] == "records.MemoryRecord" for s in req.receipt["stores"])


def test_the_receipt_downloads_as_json_without_the_user_id(login):
    client = login("compliance", username="carol")
    populate("pharmacy", USER, "mk1x9q")
    open_req = submit("pharmacy", user="someone-else")
    assert client.post(f"/erasure/{open_req.pk}/receipt.json").status_code == 404
    req = erase("pharmacy")
    response = client.post(f"/erasure/{req.pk}/receipt.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert (
        response["Content-Disposition"] == f'attachment; filename="erasure-{req.pk}-receipt.json"'
    )
    body = response.content.decode()
    assert USER not in body and "mk1x9q" not in body and "penicillin" not in body
    receipt = json.loads(body)
    assert receipt["subject"]["user_id_hmac_sha256"] == req.subject_hash
    assert receipt["verification"]["passed"] is True
    assert {s["store"] for s in receipt["stores"]} >= {
        "records.MemoryRecord",
        "records.UserState",
        "records.SearchLog",
        "records.EvictedRecord",
    }
    assert req.audit.filter(action="receipt_downloaded", actor="carol").count() == 1


def test_a_receipt_download_is_audited_only_from_a_post_with_the_csrf_token(make_user):
    """A GET (a link or image on another site) writes nothing; the page's form POSTs."""
    req = erase("pharmacy")
    url = f"/erasure/{req.pk}/receipt.json"
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("carol", "compliance"))

    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403  # no CSRF token
    assert not req.audit.filter(action="receipt_downloaded").exists()

    page = client.get(f"/erasure/{req.pk}/")
    html = page.content.decode()
    assert f'method="post" action="{url}"' in html and "csrfmiddlewaretoken" in html
    token = page.context["csrf_token"]
    response = client.post(url, {"csrfmiddlewaretoken": str(token)})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert req.audit.filter(action="receipt_downloaded", actor="carol").count() == 1
    listed = client.get("/erasure/").content.decode()
    assert f'method="post" action="{url}"' in listed


def test_the_list_finds_requests_by_user_id_through_the_hash(login):
    client = login("compliance")
    req = erase("pharmacy")
    submit("pharmacy", user="someone-else")
    found = client.post("/erasure/", {"user": USER})
    assert [r.pk for r in found.context["page"].object_list] == [req.pk]
    assert 'value="' + USER + '"' in found.content.decode()  # the box keeps what was typed
    assert len(client.get("/erasure/").context["page"].object_list) == 2


def test_the_user_id_is_never_searched_from_the_url(login):
    """The id would be in access logs: a GET (an old link) searches nothing and says why."""
    client = login("compliance")
    erase("pharmacy")
    submit("pharmacy", user="someone-else")
    page = client.get("/erasure/", {"user": USER})
    assert len(page.context["page"].object_list) == 2
    assert "no longer searched from the address" in page.content.decode()
    form = client.get("/erasure/").content.decode()
    assert 'method="post" action="/erasure/"' in form and 'hx-post="/erasure/"' in form


def test_the_lookup_needs_the_csrf_token_and_htmx_gets_the_table_only(make_user):
    req = erase("pharmacy")
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("carol", "compliance"))
    assert client.post("/erasure/", {"user": USER}).status_code == 403
    token = str(client.get("/erasure/").context["csrf_token"])
    partial = client.post(
        "/erasure/", {"user": USER}, headers={"HX-Request": "true", "X-CSRFToken": token}
    )
    html = partial.content.decode()
    assert partial.status_code == 200 and "<html" not in html and 'id="requests"' in html
    assert f"#{req.pk}" in html


def test_the_pages_of_a_lookup_are_posts_too(login):
    client = login("compliance")
    for _ in range(51):
        submit("pharmacy")
        ErasureRequest.objects.filter(status="submitted").update(status="failed")
    first = client.post("/erasure/", {"user": USER})
    html = first.content.decode()
    assert "?user=" not in html and 'name="page" value="2"' in html
    second = client.post("/erasure/", {"user": USER, "page": "2"})
    assert second.context["page"].number == 2 and len(second.context["page"].object_list) == 1


def test_a_failed_request_can_be_retried_from_its_page(login):
    client = login("compliance")
    req = submit("pharmacy")
    ErasureRequest.objects.filter(pk=req.pk).update(status="failed", failure_reason="boom")
    assert client.post(f"/erasure/{req.pk}/retry/").status_code == 302
    req.refresh_from_db()
    assert req.status == "submitted"
    assert client.post(f"/erasure/{req.pk}/retry/", follow=True).status_code == 200
    assert req.audit.filter(action="retried").count() == 1


def test_retrying_a_failed_request_while_a_newer_one_is_open_is_refused_clearly(login):
    client = login("compliance")
    failed = submit("pharmacy")
    ErasureRequest.objects.filter(pk=failed.pk).update(status="failed", failure_reason="boom")
    newer = submit("pharmacy")  # submitted again since it failed
    page = client.post(f"/erasure/{failed.pk}/retry/", follow=True)
    assert page.status_code == 200
    assert f"Erasure #{newer.pk} of this subject" in page.content.decode()
    failed.refresh_from_db()
    assert failed.status == "failed" and not failed.audit.filter(action="retried").exists()


def test_templates_have_no_inline_scripts_or_styles():
    for path in TEMPLATES.glob("*.html"):
        text = path.read_text()
        for banned in ("<script", "<style", "style=", "onclick=", "onload=", "javascript:"):
            assert banned not in text, f"{path.name} has {banned}"
