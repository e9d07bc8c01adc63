import pytest

from records import touches


@pytest.fixture(autouse=True)
def clean_touch_buffer():
    """Redis outlives the test database: start and end each test with an empty buffer."""

    def clear():
        client = touches.redis_client()
        if client is not None:
            keys = list(client.scan_iter(match=f"{touches.PREFIX}:*", count=1000))
            if keys:
                client.delete(*keys)

    clear()
    yield
    clear()
