"""Stored ADK events read for people: text, tool calls, and compaction summaries."""

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from records.events import describe_event


def dump(event: Event, by_alias=False) -> dict:
    return event.model_dump(mode="json", exclude_none=True, by_alias=by_alias)


def test_text_function_calls_and_responses_are_read():
    event = Event(
        author="pharmacy_agent",
        invocation_id="inv-1",
        timestamp=1_700_000_000.0,
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Checking your order."),
                types.Part(function_call=types.FunctionCall(name="lookup", args={"order": 7})),
                types.Part(
                    function_response=types.FunctionResponse(
                        name="lookup", response={"status": "shipped"}
                    )
                ),
            ],
        ),
    )
    for by_alias in (False, True):
        view = describe_event(dump(event, by_alias))
        assert (view.author, view.invocation_id) == ("pharmacy_agent", "inv-1")
        assert view.texts == ["Checking your order."]
        assert view.calls == [("lookup", '{\n  "order": 7\n}')]
        assert view.responses == [("lookup", '{\n  "status": "shipped"\n}')]
        assert view.compaction is None
        assert view.timestamp.year == 2023


def test_compaction_summary_is_recognised_with_its_range():
    event = Event(
        author="user",
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=1_700_000_000.0,
                end_timestamp=1_700_000_600.0,
                compacted_content=types.Content(
                    role="model", parts=[types.Part(text="User asked about refunds.")]
                ),
            ),
            state_delta={"mood": "calm"},
        ),
    )
    for by_alias in (False, True):
        view = describe_event(dump(event, by_alias))
        assert view.compaction is not None
        assert view.compaction.texts == ["User asked about refunds."]
        assert (view.compaction.end - view.compaction.start).total_seconds() == 600
        assert view.state_keys == ["mood"]


def test_malformed_events_do_not_break_the_page():
    view = describe_event({"content": {"parts": ["odd", {"text": 3}]}, "timestamp": "x"})
    assert (view.texts, view.calls, view.timestamp) == ([], [], None)
