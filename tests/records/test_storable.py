import random
import re

import pytest

from records.storable import REPLACEMENT, storable, storable_text

# The rule as a regular expression, kept here only as the tests' oracle.
ORACLE = re.compile("[\x00\ud800-\udfff]")
ALPHABET = ["a", " ", "é", "東", "\x00", "\ud800", "\udfff", "\U0001f600", "\ud7ff", "\ue000"]


@pytest.mark.parametrize("seed", range(5))
def test_storable_text_replaces_exactly_nul_and_lone_surrogates(seed):
    rng = random.Random(seed)
    for _ in range(300):
        text = "".join(rng.choices(ALPHABET, k=rng.randint(0, 12)))
        assert storable_text(text) == ORACLE.sub(REPLACEMENT, text)


def test_clean_text_is_returned_as_is_and_nested_strings_are_cleaned(caplog):
    text = "Zürich 東京 \U0001f600"
    assert storable_text(text) is text
    value = {"k\x00": ["ok", {"deep": "a\udc80b"}], "n": 3}
    assert storable(value, what="state") == {
        "k\ufffd": ["ok", {"deep": "a\ufffdb"}],
        "n": 3,
    }
    assert "state held NUL" in caplog.text
