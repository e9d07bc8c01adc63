"""Real headless Chromium (Debian's binary; Playwright's own download needs a network)."""

import shutil

import pytest
from django.db import connections
from django.test.utils import override_settings

CHROMIUM = shutil.which("chromium")
PASSWORD = "pw-Secret-123"  # the make_user fixture's


@pytest.fixture(scope="session", autouse=True)
def _plain_http_live_server():
    # The live server builds its middleware once, when the first browser test starts it,
    # and SecurityMiddleware reads SECURE_SSL_REDIRECT then (on with DEBUG off): without
    # this, every page would redirect to an HTTPS the test server does not speak.
    with override_settings(SECURE_SSL_REDIRECT=False):
        yield


@pytest.fixture
def browser_settings(settings):
    # The live server speaks plain HTTP. With DEBUG off (the PostgreSQL run) settings mark
    # cookies Secure, and a browser would not send them back over HTTP, so the login
    # would not stick. Only this plain-HTTP test server relaxes them.
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    return settings


@pytest.fixture
def page(browser_settings, monkeypatch):
    if not CHROMIUM:
        pytest.skip("chromium is not on PATH (apt-get install chromium); CI installs it")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls
    # (creating data, checking the audit log) are plain synchronous code all the same.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(15_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.js_errors = errors
        # Every page must work under the Content-Security-Policy: the browser reports each
        # refused script, style or connection on the console.
        violations: list[str] = []
        page.on(
            "console",
            lambda msg: (
                violations.append(msg.text) if "Content Security Policy" in msg.text else None
            ),
        )
        yield page
        assert violations == [], "CSP violations:\n" + "\n".join(violations)
        # While Playwright's loop runs, Django keeps this thread's connections apart
        # (asgiref's context-local storage); close them here, or they outlive the test.
        connections.close_all()
        context.close()
        browser.close()


@pytest.fixture
def log_in(page, live_server, make_user):
    """log_in("support") -> the page, logged in through the real login form."""

    def do(*roles, username=None):
        user = make_user(username or "-".join(roles), *roles)
        page.goto(live_server.url + "/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(live_server.url + "/overview/")
        return page

    return do
