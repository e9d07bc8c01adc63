"""The header names the signed-in user once, with their roles when those add something."""

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def who(client) -> str:
    content = client.get(reverse("audit")).content.decode()
    block = re.search(r'<div class="who">\s*(.*?)\s*<form', content, re.S)
    assert block, "no header"
    return block.group(1)


@pytest.mark.parametrize(
    ("username", "roles", "shown"),
    [
        ("support", ("support",), "support"),  # a role account: not "support · support"
        ("olga", ("ops",), "olga · ops"),
        ("sam", ("support", "compliance", "ops"), "sam · compliance, ops, support"),
    ],
)
def test_the_header_shows_the_name_and_roles_only_when_they_differ(login, username, roles, shown):
    assert who(login(*roles, username=username)) == shown
