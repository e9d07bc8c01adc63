"""memadmin's logs name no memory user and log a refusal once (issue 13, finding 10)."""

import logging
import sys
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import resolve, reverse

from memadmin.pseudonyms import pseudonym, pseudonymous_path, subject_hash, unrouted_path

pytestmark = pytest.mark.django_db

# A "/" and non-ASCII too: the whole id must go, however Django escapes it.
USERS = ["bank-user-001", "bänk/user 001"]


def request_lines(caplog) -> list[logging.LogRecord]:
    """What memadmin itself logged about requests (django-axes' own lines aside)."""
    return [r for r in caplog.records if not r.name.startswith("axes")]


def rendered(caplog) -> str:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    return "\n".join(handler.format(r) for r in request_lines(caplog))


def test_the_pseudonym_is_the_start_of_the_receipts_keyed_hash():
    assert pseudonym("bank-user-001") == "hmac:" + subject_hash("bank-user-001")[:16]
    assert pseudonym("bank-user-001") != pseudonym("bank-user-002")


@pytest.mark.parametrize("user", ["bank-user-001", "bänk user 001"])
def test_api_paths_name_the_user_by_pseudonym(rf, user):
    """The API's error lines use the same function."""
    request = rf.get(f"/api/v1/apps/pharmacy/users/{user}/sessions")
    request.resolver_match = resolve(request.path_info)
    expected = f"/api/v1/apps/pharmacy/users/{pseudonym(user)}/sessions"
    assert pseudonymous_path(request) == expected
    unrelated = rf.get("/erasure/3/")
    unrelated.resolver_match = resolve(unrelated.path_info)
    assert pseudonymous_path(unrelated) == "/erasure/3/"


def test_a_path_no_route_took_apart_loses_all_after_users(rf):
    """A 404, or an id with "/" the API cannot route: which part is the id is unknown."""
    for tail in ("bank-user-001/nothing-here", "bänk/user 001/sessions"):
        request = rf.get(f"/api/v1/apps/pharmacy/users/{tail}")
        request.resolver_match = resolve(request.path_info)  # the API's catch-all
        assert pseudonymous_path(request) == "/api/v1/apps/pharmacy/users/..."


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/nothing/here", "/nothing/here"),
        ("/x/users/", "/x/users/"),
        ("/x/users/a\nb/users/c", "/x/users/..."),
        ("/users/users/", "/users/..."),
    ],
)
def test_an_unrouted_path_keeps_only_what_comes_before_the_first_users_segment(path, logged):
    assert unrouted_path(path) == logged


@pytest.mark.parametrize("user", USERS)
def test_a_refused_page_is_one_line_naming_the_user_by_pseudonym(login, caplog, user):
    client = login("support")
    url = reverse("records:preview", args=["pharmacy", user])  # ops only
    with caplog.at_level("INFO"):
        assert client.get(url).status_code == 403
    [line] = request_lines(caplog)
    assert line.name == "memadmin.authz" and line.exc_info is None
    text = rendered(caplog)
    assert "\n" not in text and "Traceback" not in text
    assert f"path=/users/pharmacy/{pseudonym(user)}/preview/" in text
    for part in user.split("/"):
        assert part not in text


def test_every_refusal_is_logged_once_and_in_one_line(login, caplog):
    client = login("support")
    pages = ["/erasure/", "/api-keys/", reverse("records:preview", args=["app", "u-1"])]
    with caplog.at_level("INFO"):
        for url in pages:
            assert client.get(url).status_code == 403
    lines = request_lines(caplog)
    assert len(lines) == len(pages)
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)


def test_a_csrf_refusal_names_the_user_by_pseudonym(make_user, caplog):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("sam", "support"))
    url = reverse("records:pin", args=["pharmacy", "bank-user-001", 1])
    with caplog.at_level("INFO"):
        assert client.post(url).status_code == 403
    [line] = request_lines(caplog)
    assert line.name == "django.security.csrf"
    assert pseudonym("bank-user-001") in line.getMessage()
    assert "bank-user-001" not in rendered(caplog)


def test_other_request_lines_name_the_user_by_pseudonym(login, caplog):
    client = login("support")
    url = reverse("records:pin", args=["pharmacy", "bank-user-001", 999_999])
    with caplog.at_level("INFO"):
        assert client.post(url).status_code == 404
    assert "bank-user-001" not in rendered(caplog)
    assert pseudonym("bank-user-001") in rendered(caplog)


def test_an_erasure_lookup_leaves_no_id_in_the_request_line(login, caplog):
    client = login("compliance")
    with caplog.at_level("INFO"):
        assert client.post("/erasure/", {"user": "bank-user-001"}).status_code == 200
    assert "bank-user-001" not in rendered(caplog)


def test_the_runserver_access_line_names_users_by_pseudonym(caplog):
    """``make run`` serves with runserver: its access log goes through the same config."""
    # The user "bänk/user 001" (a "/" is written "~s" in a dashboard URL: memadmin.url_ids)
    line = "GET /users/pharmacy/b%C3%A4nk~suser%20001/?q=bank-us&page=2 HTTP/1.1"
    with caplog.at_level("INFO", logger="django.server"):
        logging.getLogger("django.server").warning('"%s" %s %s', line, "403", "12")
    message = caplog.records[-1].getMessage()
    assert "bänk" not in message and "b%C3%A4nk" not in message and "bank-us" not in message
    assert "user" not in message.removeprefix('"GET /users/')
    assert f"/users/pharmacy/{pseudonym('bänk/user 001')}/" in message
    assert f"q={pseudonym('bank-us')}" in message and "page=2" in message
    assert message.startswith('"GET ') and message.endswith('HTTP/1.1" 403 12')
    # The login page's next is the page asked for: its own ids are pseudonymised.
    line = "GET /login/?next=/users/pharmacy/b%C3%A4nk~suser%20001/%3Fq%3Dbank-us HTTP/1.1"
    with caplog.at_level("INFO", logger="django.server"):
        logging.getLogger("django.server").warning('"%s" %s %s', line, "200", "12")
    message = caplog.records[-1].getMessage()
    assert "b%C3%A4nk" not in message and "bank-us" not in message, message
    target = f"/users/pharmacy/{pseudonym('bänk/user 001')}/?q={pseudonym('bank-us')}"
    assert message == f'"GET /login/?{urlencode({"next": target}, safe=":/")} HTTP/1.1" 200 12'
    # A next within a next within a next (a crafted target) is read two deep, no more.
    nested = "/login/" + "?next=/" * 600 + "users/pharmacy/bank-user-001/"
    from memadmin.log_filters import pseudonymous_target

    assert "bank-user-001" not in pseudonymous_target(nested)
    # An API sessions page's cursor holds the last listed session's user id, hex-encoded.
    cursor = f"1.5~{b'bank-user-001'.hex()}~{b's1'.hex()}"
    line = f"GET /api/v1/apps/pharmacy/sessions?limit=5&cursor={cursor} HTTP/1.1"
    with caplog.at_level("INFO", logger="django.server"):
        logging.getLogger("django.server").warning('"%s" %s %s', line, "200", "12")
    message = caplog.records[-1].getMessage()
    assert b"bank-user-001".hex() not in message
    assert f"cursor={pseudonym(cursor)}" in message and "limit=5" in message
    # The same id written the old way, "/" and all, matches no route: all after /users/ goes.
    old = "GET /users/pharmacy/b%C3%A4nk/user%20001/ HTTP/1.1"
    with caplog.at_level("INFO", logger="django.server"):
        logging.getLogger("django.server").warning('"%s" %s %s', old, "404", "12")
    assert caplog.records[-1].getMessage() == '"GET /users/... HTTP/1.1" 404 12'


def test_an_access_line_filtered_twice_is_pseudonymised_once():
    """A second logging setup (``django.setup()`` again) adds the filter a second time."""
    from memadmin.log_filters import AccessLogFilter

    line = "GET /users/pharmacy/bank-user-001/ HTTP/1.1"
    record = logging.LogRecord("django.server", logging.INFO, "", 1, '"%s"', (line,), None)
    AccessLogFilter().filter(record)
    AccessLogFilter().filter(record)
    assert record.getMessage() == f'"GET /users/pharmacy/{pseudonym("bank-user-001")}/ HTTP/1.1"'


def test_with_debug_on_each_request_warning_reaches_one_handler(settings):
    """Django's own console handler prints with DEBUG on: ``make run`` showed every
    refusal twice. Now a request warning reaches the root's console handler only."""
    settings.DEBUG = True
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "x", (), None)
    handlers, logger = [], logging.getLogger("django.request")
    while logger is not None:
        handlers += [
            h
            for h in logger.handlers
            if not type(h).__module__.startswith("_pytest") and h.filter(record)
        ]
        logger = logger.parent if logger.propagate else None
    assert len(handlers) == 1


@pytest.mark.parametrize(
    "user",
    ["cust%2F0042", "john smith", "o'brien", "smith,john", "a/b)c", "alice\nsmith",
     "x/pinnedmemadmin://apps/SECRET"],
)  # fmt: skip
def test_resource_uris_in_mcp_log_lines_name_the_user_by_pseudonym(user):
    from urllib.parse import unquote

    from memadmin.log_filters import McpLogFilter, pseudonymous_resource_text

    uri = f"memadmin://apps/pharmacy/users/{user}/pinned"
    safe = f"memadmin://apps/pharmacy/users/{pseudonym(unquote(user))}/pinned"
    assert pseudonymous_resource_text(uri) == safe
    assert pseudonymous_resource_text(f"Unknown resource: {uri}") == f"Unknown resource: {safe}"
    # No resource ending after the id: all the rest of the text goes (unless the id
    # itself holds "/pinned": then it is cut there, as the ending).
    if "/pinned" not in user:
        assert pseudonymous_resource_text(f"at memadmin://apps/x/users/{user} x\nnext") == (
            "at memadmin://apps/x/users/..."
        )
    assert pseudonymous_resource_text("no uri /users/bob here") == "no uri /users/bob here"
    try:
        raise RuntimeError(f"Error reading resource {uri}")
    except RuntimeError:
        record = logging.LogRecord(
            "mcp.server.mcpserver.server", logging.INFO, __file__, 1,
            "Resource %r failed: %r", (uri, f"Unknown resource: {uri}"), sys.exc_info(),
        )  # fmt: skip
    assert McpLogFilter().filter(record)
    line = logging.Formatter().format(record)
    for part in {unquote(user), user, "smith", "SECRET", "brien"} & {*unquote(user).split()}:
        assert part not in line
    assert "SECRET" not in line and "smith" not in line
    assert pseudonym(unquote(user)) in line


@pytest.mark.django_db
def test_a_stored_error_keeps_a_database_error_s_class_and_constraint_not_its_text():
    from django.db import IntegrityError, transaction

    from memadmin.log_filters import WITHHELD, stored_error
    from records.models import MemoryRecord

    assert stored_error(ValueError("bad thing")) == "ValueError: bad thing"
    try:
        with transaction.atomic():
            MemoryRecord.objects.create(
                app_name="a", user_id="cust-SECRET-1", content="secret content", tokens=-1,
                created_at="2026-01-01T00:00Z", last_accessed_at="2026-01-01T00:00Z",
            )  # fmt: skip
    except IntegrityError as exc:
        text = stored_error(exc)
    assert text.startswith("IntegrityError") and WITHHELD in text
    assert "SECRET" not in text and "secret content" not in text
