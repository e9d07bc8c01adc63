"""The API keys page in Chromium: its two small behaviours work under the CSP."""

import pytest

from api.models import ApiKey

pytestmark = pytest.mark.django_db(transaction=True)


def test_ops_creates_a_key_copies_it_and_revokes_it_after_confirming(log_in, live_server):
    page = log_in("ops")
    page.goto(live_server.url + "/api-keys/")
    page.fill("#id_app_name", "pharmacy-support")
    page.fill("#id_name", "web agent <b>prod</b>")
    page.click("button:has-text('Create key')")
    new_key = page.locator("input[aria-label='New API key']")
    token = new_key.input_value()
    assert token.startswith("mma_")
    new_key.click()  # selects the whole key, ready to copy
    selected = page.evaluate(
        "() => { const i = document.querySelector(\"input[aria-label='New API key']\");"
        " return i.value.substring(i.selectionStart, i.selectionEnd); }"
    )
    assert selected == token

    key = ApiKey.objects.get()
    messages = []

    def answer(dialog, accept):
        messages.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda d: answer(d, False))
    page.click("button:has-text('Revoke')")
    assert messages == [f"Revoke {key.prefix}… for pharmacy-support? Agents using it stop at once."]
    key.refresh_from_db()
    assert key.revoked_at is None  # dismissed: nothing sent

    page.once("dialog", lambda d: answer(d, True))
    with page.expect_navigation():
        page.click("button:has-text('Revoke')")
    key.refresh_from_db()
    assert key.revoked_at is not None
    # the name is shown as text, never as markup
    assert page.locator("td", has_text="web agent <b>prod</b>").count() == 1
    assert page.locator("main b, table b").count() == 0
    assert page.js_errors == []
