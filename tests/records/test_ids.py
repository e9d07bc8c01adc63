"""The one id validator: the same sentence wherever an id comes in. No database."""

import pytest

from records.ids import check_scope, validate_id


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (7, "app_name must be a string, not int."),
        ("  ", "app_name must not be empty or blank."),
        ("a\x00b", "app_name must not contain NUL characters."),
        ("a" * 129, "app_name is 129 characters long; at most 128 are allowed."),
    ],
)
def test_a_bad_id_is_refused_with_a_sentence(value, message):
    with pytest.raises(ValueError) as err:
        validate_id("app_name", value, 128)
    assert str(err.value) == message


def test_the_scope_checks_every_id_and_the_session_id_may_be_empty():
    check_scope("app", "user", "")
    check_scope("app", "user")
    with pytest.raises(ValueError, match="^user_id must be a string, not int"):
        check_scope("app", 5)
    with pytest.raises(ValueError, match="^session_id must not contain NUL"):
        check_scope("app", "user", "s\x00")
    with pytest.raises(ValueError, match="^session_id is 257 characters long"):
        check_scope("app", "user", "s" * 257)
