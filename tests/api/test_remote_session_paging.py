"""RemoteSessionService.list_sessions follows the server's page cursor to the end, so an
ADK caller still gets every session (a live server, pages of two)."""

import pytest

from memadmin_client import RemoteSessionService

from .conftest import APP

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_list_sessions_follows_the_cursor_through_every_page(remote_client):
    service = RemoteSessionService(client=remote_client)
    service.page_size = 2
    created = []
    for i in range(5):
        user = "alice" if i % 2 else "bob"
        created.append(
            await service.create_session(
                app_name=APP, user_id=user, session_id=f"s{i}", state={"user:n": i}
            )
        )
    sent = []
    original = remote_client.request

    async def counted(method, path, **kwargs):
        sent.append((method, path, dict(kwargs.get("params") or {})))
        return await original(method, path, **kwargs)

    remote_client.request = counted
    everyone = await service.list_sessions(app_name=APP)
    assert [s.id for s in everyone.sessions] == [s.id for s in created]
    assert all(s.events == [] for s in everyone.sessions)
    assert [s.state["user:n"] for s in everyone.sessions] == [4, 3, 4, 3, 4]  # per user
    assert (
        len(sent) == 3 and "cursor" not in sent[0][2] and all("cursor" in p for *_, p in sent[1:])
    )

    sent.clear()
    alice = await service.list_sessions(app_name=APP, user_id="alice")
    # A full last page says so itself: no request for an empty page after it.
    assert [s.id for s in alice.sessions] == ["s1", "s3"] and len(sent) == 1
