"""The one id validator: the same sentence wherever an id comes in. No database."""

import pytest

from records.ids import check_scope, decimal_id, validate_app_name, validate_id


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (7, "app_name must be a string, not int."),
        ("  ", "app_name must not be empty or blank."),
        ("a\x00b", "app_name must not contain NUL characters."),
        ("caf\xe9\ud800", "app_name must be valid Unicode: it holds a lone surrogate."),
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


@pytest.mark.parametrize("app", ["ph\x1fx", "tab\there", "del\x7f", "c1\x85"])
def test_an_app_name_may_not_hold_control_characters_a_user_id_may(app):
    """The touch buffer joins an app and a user with \\x1f and splits at the first."""
    with pytest.raises(ValueError, match="^app_name must not contain control characters"):
        check_scope(app, "user")
    with pytest.raises(ValueError, match="^app_name must not contain control characters"):
        validate_app_name(app)
    check_scope("pharmacy", "user\x1fwith\tcontrols")
    assert validate_app_name("Zürich agent\u00a0v2") == "Zürich agent\u00a0v2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5", 5),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),  # past a bigint
        ("05", None),  # not how we write 5
        ("²", None),  # a digit to str.isdigit, not to int()
        ("1" * 5000, None),  # int() would raise
        ("", None),
        ("-1", None),
        ("5.0", None),
    ],
)
def test_a_decimal_id_is_a_row_id_as_we_write_them(text, expected):
    assert decimal_id(text) == expected
