"""Free-text ids as one URL segment: every id has exactly one spelling, and it
resolves to the page of that id and no other."""

from urllib.parse import unquote

import pytest
from django.urls import resolve, reverse
from hypothesis import given
from hypothesis import strategies as st

from memadmin.url_ids import from_segment, to_segment


@given(st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=40))
def test_every_id_is_one_segment_that_reads_back_as_itself(value):  # no id holds NUL
    segment = to_segment(value)
    assert "/" not in segment and segment not in {".", ".."}
    assert from_segment(segment) == value


@pytest.mark.parametrize(
    ("value", "segment"),
    [("bob", "bob"), ("a/b", "a~sb"), ("~", "~~"), ("..", "~d~d"), ("a.b", "a.b")],
)
def test_spellings(value, segment):
    assert to_segment(value) == segment


@pytest.mark.parametrize("segment", ["~", "a~", "~x", "~sa~", "~d.", "a~db"])
def test_a_segment_no_id_is_written_as_is_refused(segment):
    with pytest.raises(ValueError):
        from_segment(segment)


@pytest.mark.parametrize(
    "user", ["bob/preview", "eve/records/7/pin", "line\nbreak", "..", "tab\there", "~s"]
)
def test_a_user_page_url_resolves_to_that_users_page(user):
    url = reverse("records:user", args=["team/bot", user])
    match = resolve(unquote(url))  # as the server hands the path over: decoded
    assert match.url_name == "user"
    assert match.kwargs == {"app": "team/bot", "user": user}
    preview = resolve(unquote(reverse("records:preview", args=["shop", user])))
    assert preview.url_name == "preview" and preview.kwargs["user"] == user


def test_an_id_segment_written_otherwise_is_not_found(client):
    from django.urls import Resolver404

    with pytest.raises(Resolver404):
        resolve("/users/shop/bob~x/")
