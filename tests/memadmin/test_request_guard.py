"""A request whose Content-Length is no number is refused with a 400, not a 500."""

import pytest
from django.test import Client


@pytest.mark.parametrize("path", ["/api/v1/apps/a/users/u/memory/search", "/login/"])
@pytest.mark.parametrize("length", ["abc", "-1", "1.5", "²"])
def test_a_content_length_that_is_no_number_is_a_400(path, length):
    response = Client(raise_request_exception=False).generic(
        "POST", path, b"{}", content_type="application/json", CONTENT_LENGTH=length
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Content-Length must be a number of bytes.",
        "code": "bad_request",
    }


def test_a_numeric_content_length_passes(client):
    response = client.generic("POST", "/login/", b"", CONTENT_LENGTH="0")
    assert response.status_code != 400
