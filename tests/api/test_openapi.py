"""The OpenAPI document states the rules the server enforces (api.openapi)."""

import json
import random
import re
import time

import pytest
from google.genai import types

from api.openapi import BASE64_PATTERN, ID_PATTERN
from records.timestamps import EARLIEST_SECONDS, latest_allowed

USER_PATH = "/api/v1/apps/{app_name}/users/{user_id}"


@pytest.fixture
def document(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def parameter(document, path, method, name):
    [found] = [p for p in document["paths"][path][method]["parameters"] if p["name"] == name]
    schema = found["schema"]
    return next((b for b in schema.get("anyOf", ()) if b.get("type") != "null"), schema)


def test_memory_id_is_an_integer_and_ids_are_not_blank(document):
    memory_id = parameter(document, f"{USER_PATH}/memory/{{memory_id}}", "delete", "memory_id")
    assert memory_id["type"] == "integer" and memory_id["minimum"] == 0
    session = f"{USER_PATH}/sessions/{{session_id}}"
    for name, longest in (("app_name", 128), ("user_id", 256), ("session_id", 256)):
        schema = parameter(document, session, "get", name)
        assert (schema["minLength"], schema["maxLength"], schema["pattern"]) == (
            1,
            longest,
            ID_PATTERN,
        )
    query = parameter(document, f"{USER_PATH}/artifacts/{{filename}}", "get", "session_id")
    assert query["pattern"] == ID_PATTERN
    filename = parameter(document, f"{USER_PATH}/artifacts/{{filename}}", "get", "filename")
    assert filename["maxLength"] == 512


@pytest.mark.parametrize(
    ("text", "valid"),
    [("s1", True), (" s1 ", True), ("", False), ("   ", False), ("\t\n", False), ("a\x00b", False)],
)
def test_the_id_pattern_is_the_domains_rule(text, valid):
    assert bool(re.search(ID_PATTERN, text)) is valid


def test_event_timestamps_state_the_range_as_of_today(client):
    before = latest_allowed(time.time())
    document = client.get("/api/v1/openapi.json").json()
    after = latest_allowed(time.time())
    timestamp = document["components"]["schemas"]["EventIn"]["properties"]["timestamp"]
    assert timestamp["minimum"] == EARLIEST_SECONDS
    assert timestamp["maximum"] in (before, after)  # the same, unless midnight passed
    assert "2000-01-01" in timestamp["description"]


def test_base64_bytes_state_the_alphabet_pydantic_accepts(document):
    part = document["components"]["schemas"]["Part"]["properties"]["thoughtSignature"]
    assert any(b.get("pattern") == BASE64_PATTERN for b in part["anyOf"])
    pattern = re.compile(BASE64_PATTERN)
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice("AQgwBRhx+/-_=a0") for _ in range(rng.randint(0, 9)))
        try:
            types.Part.model_validate_json(json.dumps({"thoughtSignature": text}))
            accepted = True
        except ValueError:
            accepted = False
        assert accepted is bool(pattern.search(text)), text


def test_appended_events_are_final_and_artifacts_hold_something(document):
    schemas = document["components"]["schemas"]
    event = schemas["AppendEventIn"]["properties"]["event"]
    assert "partial" in json.dumps(event) and "never stored" in event["description"]
    artifact = schemas["SaveArtifactIn"]["properties"]["artifact"]
    assert "inlineData" in json.dumps(artifact) and "fileData" in json.dumps(artifact)
    assert len(schemas["CacheMetadata"]["anyOf"]) == 2


def test_the_fuzz_test_refuses_valid_requests_being_refused():
    from tests.api.test_fuzz import CONFIG

    assert CONFIG.projects.default.checks.positive_data_acceptance.enabled


def test_listings_document_their_cursor_paging(document):
    from api.routes.sessions import CURSOR_PATTERN, PAGE_MAX, decode_cursor, encode_cursor

    for path in (f"{USER_PATH}/sessions", "/api/v1/apps/{app_name}/sessions"):
        cursor = parameter(document, path, "get", "cursor")
        assert cursor["pattern"] == CURSOR_PATTERN
        limit = parameter(document, path, "get", "limit")
        assert (limit["minimum"], limit["maximum"]) == (1, PAGE_MAX)
        assert "nextCursor" in document["paths"][path]["get"]["description"]
    listing = document["components"]["schemas"]["SessionListOut"]["properties"]
    assert "nextCursor" in listing and "next page" in json.dumps(listing["nextCursor"])
    # What the server hands out matches the pattern it documents, and reads back exactly.
    for position in ((1_790_000_000.123456, "ünï", "s 1"), (946_684_800.0, "u", "\U0001f600")):
        made = encode_cursor(position)
        assert re.search(CURSOR_PATTERN, made) and decode_cursor(made) == position
