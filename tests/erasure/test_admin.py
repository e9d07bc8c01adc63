"""The Django admin never filters erasure records by their subject (issue 13, finding 9)."""

import pytest
from django.urls import reverse

from .helpers import OTHER, USER, submit

pytestmark = pytest.mark.django_db

SUBJECT_LOOKUPS = [
    {"user_id__startswith": USER[:4]},
    {"user_id": USER},
    {"user_id__in": USER},
    {"user_id__regex": "^cust"},
    {"user_id__gt": ""},
    {"subject_hash__startswith": "0"},
]


@pytest.fixture
def root(login):
    return login(superuser=True, username="root")


@pytest.mark.parametrize("lookup", SUBJECT_LOOKUPS)
def test_the_request_list_refuses_lookups_on_the_subject(root, lookup):
    submit("pharmacy")
    submit("pharmacy", user=OTHER)
    url = reverse("admin:erasure_erasurerequest_changelist")
    response = root.get(url, lookup)
    assert response.status_code == 400
    assert USER.encode() not in response.content


@pytest.mark.parametrize(
    ("model", "lookup"),
    [
        ("erasureauditentry", {"request__user_id__startswith": USER[:4]}),
        ("erasureauditentry", {"request__subject_hash": "0" * 64}),
        ("erasurebarrier", {"subject_hash__startswith": "0"}),
        ("erasurebarrier", {"request__user_id": USER}),
    ],
)
def test_related_and_hash_lookups_are_refused_too(root, model, lookup):
    submit("pharmacy")
    assert root.get(reverse(f"admin:erasure_{model}_changelist"), lookup).status_code == 400


def test_the_lists_and_their_status_filter_still_work(root):
    open_req = submit("pharmacy")
    url = reverse("admin:erasure_erasurerequest_changelist")
    response = root.get(url, {"status__exact": "submitted"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [open_req]
    assert USER.encode() not in response.content
    for model in ("erasureauditentry", "erasurebarrier"):
        assert root.get(reverse(f"admin:erasure_{model}_changelist")).status_code == 200
