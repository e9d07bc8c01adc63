"""Rules the server enforces that the generated OpenAPI document would not state.

ninja generates the document from the routes and pydantic models; some rules live
elsewhere (the domain's id check, ADK's own validators, the timestamp range) and are
written into the document here, once it is generated, so that it says exactly what the
server accepts. The schema fuzz test (tests/api/test_fuzz.py) holds the two to each
other: a request valid by the document must not be refused.
"""

from __future__ import annotations

import copy
from typing import Any

from records.timestamps import EARLIEST_SECONDS, latest_allowed

# Keywords the service checks itself (the domain, or ADK's pydantic models), with a
# message that says more than a schema error would: the range and the unit of a
# timestamp, why an id or a partial event is refused, what base64 is wrong. The
# request validator leaves them out (``for_the_request_validator``).
CHECKED_BY_SERVICE = "x-checked-by-service"

# records.ids.validate_id: some non-blank character, no NUL. Linear in the text's
# length (a lookahead at the start only) for any client's validator.
ID_PATTERN = r"^(?=\s*\S)[^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"
ID_RULE = {"pattern": ID_PATTERN, CHECKED_BY_SERVICE: ["pattern"]}
NO_NUL_RULE = {"pattern": NO_NUL_PATTERN, CHECKED_BY_SERVICE: ["pattern"]}
# Parameters that name an app, user, session or artifact (path or query).
ID_PARAMETERS = frozenset({"app_name", "user_id", "session_id", "filename"})


def _base64(alphabet: str) -> str:
    # Groups of four; a short last group, padded or not, may carry no stray bits
    # (pydantic's decoder refuses "QR==" and takes "QQ==").
    return f"(?:{alphabet}{{4}})*(?:{alphabet}[AQgw]={{0,2}}|{alphabet}{{2}}[AEIMQUYcgkosw048]=?)?"


# Bytes travel as base64, in the standard or the URL-safe alphabet (not both at once).
BASE64_PATTERN = f"^(?:{_base64('[A-Za-z0-9+/]')}|{_base64('[A-Za-z0-9_-]')})$"


def _string_branch(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The string schema itself, or the string branch of an optional one (anyOf)."""
    if schema.get("type") == "string":
        return schema
    for branch in schema.get("anyOf", ()):
        if branch.get("type") == "string":
            return branch
    return None


def id_rule(schema: dict[str, Any]) -> None:
    string = _string_branch(schema)
    if string is not None:
        string.update(minLength=max(1, string.get("minLength", 0)), **ID_RULE)


def _base64_everywhere(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "string" and node.get("format") == "base64url":
            node.update(pattern=BASE64_PATTERN, **{CHECKED_BY_SERVICE: ["pattern"]})
        for value in node.values():
            _base64_everywhere(value)
    elif isinstance(node, list):
        for value in node:
            _base64_everywhere(value)


def _cache_metadata_states(schemas: dict[str, Any]) -> None:
    # ADK's CacheMetadata: cache_name, expire_time and invocations_used all set (an active
    # cache) or none of them (fingerprint only), its own validator says.
    cache = schemas.get("CacheMetadata")
    if cache is None:
        return
    properties = cache.get("properties", {})
    names = [n for n in ("cache_name", "expire_time", "invocations_used") if n in properties]

    def set_value(name: str) -> dict[str, Any]:
        branches = [b for b in properties[name].get("anyOf", ()) if b.get("type") != "null"]
        return branches[0] if len(branches) == 1 else {"not": {"type": "null"}}

    cache["anyOf"] = [
        {"required": names, "properties": {n: set_value(n) for n in names}},
        {"properties": {n: {"type": "null"} for n in names}},
    ]
    cache[CHECKED_BY_SERVICE] = ["anyOf"]


def _only_final_events_are_appended(schemas: dict[str, Any]) -> None:
    append = schemas.get("AppendEventIn", {}).get("properties", {})
    if "event" in append:
        append["event"] = {
            "allOf": [
                append["event"],
                {
                    "properties": {"partial": {"anyOf": [{"const": False}, {"type": "null"}]}},
                    CHECKED_BY_SERVICE: ["properties"],
                },
            ],
            "description": "A final event: partial (streaming) events are never stored.",
        }


def _artifacts_hold_something(schemas: dict[str, Any]) -> None:
    # records.artifacts: an artifact is inline bytes, text or a file reference.
    save = schemas.get("SaveArtifactIn", {}).get("properties", {})
    if "artifact" in save:
        kinds = (("inlineData", "object"), ("text", "string"), ("fileData", "object"))
        save["artifact"] = {
            "allOf": [
                save["artifact"],
                {
                    "anyOf": [
                        {"required": [name], "properties": {name: {"type": kind}}}
                        for name, kind in kinds
                    ],
                    CHECKED_BY_SERVICE: ["anyOf"],
                },
            ],
            "description": "A Part with inlineData, text or fileData.",
        }


def _timestamps(schemas: dict[str, Any], now: float) -> None:
    # records.timestamps: from 2000-01-01 to the end of tomorrow (UTC) by the server's
    # clock. The upper bound moves once a day; the document states it as of the day it
    # was generated (a later day accepts more, never less).
    event = schemas.get("EventIn", {}).get("properties", {}).get("timestamp")
    if event is not None:
        event.update(
            minimum=EARLIEST_SECONDS,
            maximum=latest_allowed(now),
            description="Seconds since the epoch, from 2000-01-01 to the end of tomorrow "
            "(UTC) by the server's clock: the maximum here is that bound on the day this "
            "document was generated. Defaults to the server's time.",
        )
        event[CHECKED_BY_SERVICE] = ["minimum", "maximum"]


def state_the_rules(document: dict[str, Any], now: float) -> dict[str, Any]:
    """``document`` with the server's rules written into it (changed in place)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["name"] in ID_PARAMETERS:
                    id_rule(parameter["schema"])
    schemas = document.get("components", {}).get("schemas", {})
    _base64_everywhere(schemas)
    _cache_metadata_states(schemas)
    _only_final_events_are_appended(schemas)
    _artifacts_hold_something(schemas)
    _timestamps(schemas, now)
    return document


def for_the_request_validator(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``document`` without the keywords the service checks itself."""
    document = copy.deepcopy(document)
    _drop_checked_by_service(document)
    return document


def _drop_checked_by_service(node: Any) -> None:
    if isinstance(node, dict):
        for keyword in node.pop(CHECKED_BY_SERVICE, ()):
            node.pop(keyword, None)
        for value in node.values():
            _drop_checked_by_service(value)
    elif isinstance(node, list):
        for value in node:
            _drop_checked_by_service(value)
