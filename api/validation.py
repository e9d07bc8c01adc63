"""Requests checked against the API's own OpenAPI document before pydantic.

pydantic validates the parsed body as Python objects and, for ADK's models, in its
lax mode: ``false`` would become a timestamp of 0.0 and ``"5"`` an integer. The
document says ``number`` and ``integer``; checking the JSON against it first makes
the document the contract, exactly, for every client. Query parameters the document
does not name are refused too, as unknown body fields are: a misspelt ``session_id``
must not silently change what is listed or deleted.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.http import QueryDict
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from ninja import NinjaAPI
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .openapi import for_the_request_validator

MAX_REPORTED = 5
DOCUMENT = "urn:memadmin:api-v1"


def _whole_number(text: str) -> bool:
    digits = text.removeprefix("-")
    return digits.isascii() and digits.isdigit()


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


class RequestValidators:
    """Per operation (by operation id): a JSON Schema validator of its body, and the
    names of its query parameters."""

    def __init__(self, api: NinjaAPI) -> None:
        self.api = api

    @cached_property
    def _query_names(self) -> dict[str, frozenset[str]]:
        return self._query_parameters(lambda schema: True)

    @cached_property
    def _query_integers(self) -> dict[str, frozenset[str]]:
        """Query parameters the document says are integers (alone or or-null)."""
        return self._query_parameters(
            lambda schema: any(
                s.get("type") == "integer" for s in [schema, *schema.get("anyOf", [])]
            )
        )

    def _query_parameters(self, wanted) -> dict[str, frozenset[str]]:
        document = self.api.get_openapi_schema(path_prefix="")
        return {
            operation["operationId"]: frozenset(
                p["name"]
                for p in operation.get("parameters", [])
                if p["in"] == "query" and wanted(p["schema"])
            )
            for operations in document["paths"].values()
            for operation in operations.values()
        }

    def query_errors(self, operation, query: QueryDict) -> list[dict[str, Any]]:
        operation_id = self.api.get_openapi_operation_id(operation)
        allowed = self._query_names.get(operation_id, frozenset())
        integers = self._query_integers.get(operation_id, frozenset())
        hint = f"allowed: {', '.join(sorted(allowed))}" if allowed else "this takes none"
        found = []
        for name, values in query.lists():
            if name not in allowed:
                found.append((name, f"Unknown query parameter ({hint})", "extra_forbidden"))
            elif len(values) > 1:  # every parameter of this API takes one value
                found.append((name, "Given more than once; give it once", "repeated"))
            elif name in integers and not _whole_number(values[0]):
                # pydantic alone would read "1.0" as 1 (and refuse "1e0")
                found.append((name, "Must be a whole number in digits", "int_parsing"))
        return [
            {"loc": ["query", name], "msg": msg, "type": kind}
            for name, msg, kind in found[:MAX_REPORTED]
        ]

    @cached_property
    def _by_operation(self) -> dict[str, Draft202012Validator]:
        document = for_the_request_validator(self.api.get_openapi_schema(path_prefix=""))
        # Each body schema is validated in place, inside the document, so that its
        # "#/components/schemas/..." references resolve there.
        registry = Registry().with_resource(
            DOCUMENT, Resource.from_contents(document, default_specification=DRAFT202012)
        )
        validators = {}
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                content = operation.get("requestBody", {}).get("content", {})
                if "application/json" in content:
                    where = _pointer(
                        "paths", path, method, "requestBody", "content", "application/json"
                    )
                    validators[operation["operationId"]] = Draft202012Validator(
                        {"$ref": f"{DOCUMENT}#{where}/schema"}, registry=registry
                    )
        return validators

    def body_errors(self, operation, body: Any) -> list[dict[str, Any]]:
        """What is wrong with ``body`` for ``operation``, as the API reports it."""
        validator = self._by_operation.get(self.api.get_openapi_operation_id(operation))
        if validator is None:
            return []
        found = []
        for error in sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path)):
            # Optional fields are anyOf [type, null]: report the branch that came closest.
            error = best_match([error]) if error.context else error
            found.extend(_reported(error))
            if len(found) >= MAX_REPORTED:
                break
        return found[:MAX_REPORTED]


def _reported(error: ValidationError) -> list[dict[str, Any]]:
    """As pydantic reports them: the offending field in ``loc``, a short message."""
    loc = ["body", *(str(p) for p in error.absolute_path)]
    instance = error.instance if isinstance(error.instance, dict) else {}
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = [k for k in instance if k not in known]
        return [
            {"loc": [*loc, k], "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
            for k in extra
        ]
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in instance]
        return [{"loc": [*loc, k], "msg": "Field required", "type": "missing"} for k in missing]
    message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
    return [{"loc": loc, "msg": message, "type": f"schema.{error.validator}"}]
