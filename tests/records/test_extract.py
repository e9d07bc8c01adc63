"""Events and memory entries → candidate records."""

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records.extract import (
    MAX_CONTENT_CHARS,
    TRUNCATION_MARK,
    Extractor,
    clean_text,
    dedupe_key,
)
from records.rules import DEFAULT_RULES
from records.tokens import count_tokens

from .factories import compaction_event, text_event, tool_call_event


def extractor(classifier=None):
    return Extractor(DEFAULT_RULES, count_tokens, classifier)


def test_one_candidate_per_text_event_small_talk_tool_traffic_and_compaction_skipped():
    events = [
        text_event("Hi!"),
        text_event("I am allergic to penicillin", id="e-allergy"),
        tool_call_event(),
        compaction_event(),
        text_event("partial text", partial=True),
        text_event("Noted, thank you. Anything else?", author="agent"),
        text_event("Your order #123 will arrive Monday", author="agent", id="e-order"),
    ]
    out = extractor().from_events("pharmacy", "u1", "s1", events)
    assert [c.event_ids for c in out] == [("e-allergy",), ("e-order",)]
    allergy, order = out
    assert (allergy.pinned, allergy.importance, allergy.importance_rule) == (True, 0.95, "allergy")
    assert (order.author, order.category, order.session_id) == ("agent", "commitment", "s1")
    assert allergy.tokens == count_tokens("I am allergic to penicillin")
    assert allergy.dedupe_key == dedupe_key("pharmacy", "u1", "s1", "e-allergy")


def test_dedupe_keys_are_stable_and_scoped():
    assert dedupe_key("a", "u", "s", "e") == dedupe_key("a", "u", "s", "e")
    assert (
        len(
            {
                dedupe_key("a", "u", "s", "e"),
                dedupe_key("a", "u", "s2", "e"),
                dedupe_key("a", "v", "s", "e"),
                dedupe_key("b", "u", "s", "e"),
            }
        )
        == 4
    )


def test_classifier_scores_what_no_rule_matched_and_is_cached_on_the_candidate():
    calls = []

    def classifier(text):
        calls.append(text)
        return 0.66

    [c] = extractor(classifier).from_events("a", "u", "s", [text_event("What time do you open?")])
    assert (c.importance, c.importance_source, c.importance_rule) == (
        0.66,
        "classifier",
        "classifier",
    )
    assert calls == ["What time do you open?"]


@pytest.mark.parametrize("answer", [None, 1.7, "boom"])
def test_a_classifier_that_fails_or_answers_out_of_range_falls_back_to_default(answer, caplog):
    def classifier(text):
        if answer == "boom":
            raise RuntimeError(f"model offline while scoring {text!r}")
        return answer

    [c] = extractor(classifier).from_events("a", "u", "s", [text_event("What time do you open?")])
    assert (c.importance, c.importance_source) == (0.2, "default")
    if answer == "boom":
        # Its class and where it was raised; not its message, which quotes the memory.
        assert "RuntimeError (raised at test_extract.py:" in caplog.text
        assert "open?" not in caplog.text and "Traceback" not in caplog.text


def test_text_is_made_storable_nul_surrogates_and_huge_content():
    assert clean_text("a\x00b") == "a\ufffdb"
    assert clean_text("bad \ud800 surrogate") == "bad \ufffd surrogate"
    huge = clean_text("x" * (2 * MAX_CONTENT_CHARS))
    assert len(huge) == MAX_CONTENT_CHARS and huge.endswith(TRUNCATION_MARK)


def test_memory_entries_with_caller_overrides():
    memories = [
        MemoryEntry(
            id="m1", content=types.Content(parts=[types.Part(text="Prefers window seats")])
        ),
        MemoryEntry(content=types.Content(parts=[types.Part(text="thanks!")])),
    ]
    out = extractor().from_memories("a", "u", memories, {"importance": 0.9, "pinned": True})
    assert len(out) == 1  # small talk dropped even when added explicitly
    [c] = out
    assert (c.importance, c.importance_source, c.pinned) == (0.9, "caller", True)
    assert c.dedupe_key == dedupe_key("a", "u", "memory", "m1")


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"importance": 2}, "importance"),
        ({"importance": "high"}, "importance"),
        ({"importance": True}, "importance"),
        ({"pinned": "yes"}, "pinned"),
    ],
)
def test_bad_caller_overrides_are_refused(metadata, message):
    memories = [MemoryEntry(content=types.Content(parts=[types.Part(text="Prefers aisle")]))]
    with pytest.raises(ValueError, match=message):
        extractor().from_memories("a", "u", memories, metadata)


def test_each_event_carries_the_two_turns_before_it_including_dropped_ones():
    events = [
        text_event("What did you do while camping?", author="Caroline"),
        tool_call_event(),  # tool traffic is not a turn
        text_event("Hi!", author="Melanie"),  # small talk: no record, still context
        text_event("We roasted marshmallows", author="Melanie", id="e-reply"),
    ]
    out = extractor().from_events("pharmacy", "u1", "s1", events)
    first, reply = out
    assert first.context == ()
    assert reply.context == (
        ("Caroline", "What did you do while camping?"),
        ("Melanie", "Hi!"),
    )
    assert (reply.content, reply.tokens) == (
        "We roasted marshmallows",
        count_tokens("We roasted marshmallows"),
    )


def test_memory_entries_carry_no_context():
    entries = [
        MemoryEntry(content=types.Content(parts=[types.Part(text=t)]), author="user")
        for t in ("My name is Ana", "I live in Leeds")
    ]
    assert [c.context for c in extractor().from_memories("a", "u", entries, None)] == [(), ()]
