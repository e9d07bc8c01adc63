"""The MCP server and the HTTP API answer a search the same way for the same data: the
same memories, in the same order, with the same text, time, importance and pin."""

import pytest

from ..asyncutil import run
from .conftest import USER

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = [
    ("I am allergic to penicillin", {"pinned": True}),
    ("Deliver to 12 Elm Street", {}),
    ("My name is Ana", {"importance": 0.9}),
    ("My date of birth is 1 May 1980", {}),
    ("I prefer morning deliveries", {"importance": 0.3}),
    ("My order 4411 was delivered late", {}),
    ("I take ibuprofen for my back, not penicillin", {}),
]
QUERIES = ["penicillin", "delivery street", "name", "when were you born", "order late", "zzz"]


def from_api(entry: dict) -> dict:
    metadata = entry["custom_metadata"]  # MemoryEntry has no alias for it
    return {
        "id": entry["id"],
        "text": "\n".join(p["text"] for p in entry["content"]["parts"] if p.get("text")),
        "time": entry["timestamp"],
        "importance": metadata["importance"],
        "pinned": metadata["pinned"],
    }


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_search_results_match_the_http_api(client, connect, api_key, transport):
    headers = {"Authorization": f"Bearer {api_key}"}
    base = f"/api/v1/apps/pharmacy-support/users/{USER}/memory"
    for text, metadata in FACTS:  # written through the API, read through both
        body = {"memories": [{"content": {"role": "user", "parts": [{"text": text}]}}]}
        if metadata:
            body["customMetadata"] = metadata
        response = client.post(
            f"{base}/entries", body, content_type="application/json", headers=headers
        )
        assert response.status_code == 200, response.content

    async def searches():
        async with connect(transport, api_key) as mcp:
            return [
                (await mcp.call_tool("search_memory", {"user_id": USER, "query": q}))
                for q in QUERIES
            ]

    over_mcp = [result.structured_content["memories"] for result in run(searches())]
    over_http = []
    for query in QUERIES:
        response = client.post(
            f"{base}/search", {"query": query}, content_type="application/json", headers=headers
        )
        assert response.status_code == 200
        over_http.append([from_api(e) for e in response.json()["memories"]])
    assert over_mcp == over_http
    assert sum(map(len, over_mcp)) >= len(QUERIES)  # the queries do find things
    assert any(m["pinned"] for m in over_mcp[0])  # the pin travels too
