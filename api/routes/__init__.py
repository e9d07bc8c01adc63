"""Endpoints of API v1. Each one validates, calls one service function of ``records``
(the same ones the in-process ADK services call) and shapes the answer."""

from __future__ import annotations

import json
from typing import Annotated

from django.http import HttpResponse
from ninja import Path
from pydantic import BaseModel, BeforeValidator
from pydantic_core import PydanticSerializationError

from records.ids import record_id
from records.models import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX
from records.storable import storable

from ..schemas import ErrorOut

# Ids also carry api.openapi.ID_PATTERN in the document (not blank, no NUL); the domain
# (records.ids.validate_id) enforces it with its own messages.
AppName = Annotated[
    str, Path(min_length=1, max_length=APP_NAME_MAX, description="The app the key belongs to.")
]
UserId = Annotated[str, Path(min_length=1, max_length=USER_ID_MAX)]
SessionId = Annotated[str, Path(min_length=1, max_length=SESSION_ID_MAX)]
# A record id as search returns it (BigAutoField), its digits exactly: pydantic alone
# reads "05", " 5 ", "+5" and "5_0" as numbers, each then naming a record.
MemoryId = Annotated[
    int,
    BeforeValidator(record_id),
    # 0 names no record, as any unknown id: nothing is deleted (as in-process).
    Path(ge=0, le=2**63 - 1, description="The id search returned."),
]

# Answers every endpoint may give besides its success (documented for clients and
# checked by the schema fuzz test).
ERRORS = {code: ErrorOut for code in (400, 401, 403, 413, 422)}
NOT_FOUND = {404: ErrorOut}
CONFLICT = {409: ErrorOut}


def adk_json(model: BaseModel, status: int = 200) -> HttpResponse:
    """ADK objects as ADK's JSON (camelCase, bytes as base64), rendered by pydantic.

    ninja would dump them in Python mode, where bytes stay bytes; pydantic's JSON mode
    is the serialisation the request side (and ADK's own api_server) uses.
    """
    try:
        body = model.model_dump_json(by_alias=True, exclude_none=True)
    except PydanticSerializationError:
        # A lone surrogate (sent as a JSON "\ud800" escape), which no UTF-8 text holds:
        # answered as stored, U+FFFD (records.storable), rather than failing the call
        # after the write.
        data = storable(model.model_dump(mode="json", by_alias=True, exclude_none=True))
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return HttpResponse(body, status=status, content_type="application/json")
