"""ADK's session contract over HTTP: the suite of tests/records/test_session_conformance.py
run once more, against RemoteSessionService talking to a live memadmin server."""

import pytest

from memadmin_client import RemoteSessionService
from tests.records.test_session_conformance import *  # noqa: F403 - the suite, collected here

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

# About ADK's in-memory service or ADK itself, not about the service under test.
for _name in (
    "test_adk_in_memory_does_not_detect_stale_sessions",
    "test_a_negative_num_recent_events_is_refused_by_adk",
):
    globals().pop(_name, None)


@pytest.fixture
def service(remote_client, close_executor_connections):
    return RemoteSessionService(client=remote_client)


@pytest.fixture
def django_service(service):
    """The suite's 'ours only' tests (stale sessions) hold for the remote service too."""
    return service


@pytest.fixture
def adk_database_or_ours(django_service):
    """Ours only: ADK's database service is no more under test here than its in-memory one."""
    return django_service
