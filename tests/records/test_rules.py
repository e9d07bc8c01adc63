"""Deterministic importance, pin and drop rules (pure)."""

import pytest

from records.rules import (
    DEFAULT_RULES,
    DROP,
    SCORE,
    UNMATCHED_CATEGORY,
    Rule,
    RuleError,
    decide,
    merge_rules,
)


@pytest.mark.parametrize(
    "text",
    [
        "Hi!",
        "hello there",
        "Thanks so much for your help :)",
        "ok, thanks. Bye!",
        "👍",
        "thanks😊",
        "Noted, thank you. Anything else?",
        "Good morning",
        "  ",
        "...",
        "you're welcome, take care",
    ],
)
def test_small_talk_is_dropped(text):
    assert decide(text).drop


@pytest.mark.parametrize(
    ("text", "rule", "importance", "pinned"),
    [
        ("Thanks, and I'm allergic to penicillin", "allergy", 0.95, True),
        ("I take metformin 500 mg every morning", "medication", 0.9, True),
        ("I was diagnosed with asthma last year", "health", 0.85, False),
        ("My name is Ana Silva", "identity", 0.9, False),
        ("Please deliver to 12 Elm Street, Leeds", "contact", 0.8, False),
        ("You can reach me at ana@example.com", "contact", 0.8, False),
        ("Order #48213 should arrive Friday", "commitment", 0.75, False),
        ("I booked an appointment for Tuesday", "commitment", 0.75, False),
        ("I prefer morning deliveries", "preference", 0.6, False),
        ("The parcel arrived damaged and I am disappointed", "complaint", 0.5, False),
    ],
)
def test_default_rules_score_and_pin(text, rule, importance, pinned):
    d = decide(text)
    assert (d.drop, d.rule, d.importance, d.pinned) == (False, rule, importance, pinned)


def test_highest_importance_wins_and_any_pin_rule_pins():
    d = decide("Complaint: the courier ignored that I am allergic to latex gloves")
    assert (d.rule, d.importance, d.pinned, d.category) == ("allergy", 0.95, True, "health")


def test_unmatched_text_is_kept_with_no_importance_for_the_classifier():
    d = decide("What time do you open on Sunday?")
    assert (d.drop, d.importance, d.rule, d.category) == (False, None, "", UNMATCHED_CATEGORY)


def test_dates_are_not_mistaken_for_phone_numbers():
    assert decide("See you on 2026-12-02 then, it was nice").rule != "contact"


def test_long_text_is_never_small_talk_and_matching_stays_fast():
    assert not decide("ok " * 100).drop  # over the small-talk length limit: kept
    # adversarial input for the small-talk pattern finishes immediately
    assert not decide("😊" * 150 + "x").drop


def test_app_override_replaces_a_default_and_can_disable_one():
    custom = [
        Rule("complaint", r"\bcourier\b", SCORE, 0.3, False, "complaint"),
        Rule("preference", r"x", SCORE, 0.1, enabled=False),
        Rule("vip", r"\bgold member\b", SCORE, 0.7, True, "identity"),
    ]
    rules = merge_rules(DEFAULT_RULES, custom)
    names = [r.name for r in rules]
    assert "preference" not in names and "vip" in names
    assert decide("the courier was late", rules).importance == 0.3
    d = decide("I am a gold member", rules)
    assert (d.rule, d.pinned) == ("vip", True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "bad name!", "pattern": "x", "importance": 0.5}, "name must be"),
        ({"name": "r", "pattern": "(", "importance": 0.5}, "not a valid regular expression"),
        ({"name": "r", "pattern": "x", "importance": 1.5}, "importance between 0 and 1"),
        ({"name": "r", "pattern": "x"}, "importance between 0 and 1"),
        ({"name": "r", "pattern": "x", "action": DROP, "pin": True}, "cannot pin"),
        ({"name": "r", "pattern": "x", "action": "keep", "importance": 0.5}, "action must be"),
    ],
)
def test_malformed_rules_are_refused_with_a_message(kwargs, message):
    with pytest.raises(RuleError, match=message):
        Rule(**kwargs)
