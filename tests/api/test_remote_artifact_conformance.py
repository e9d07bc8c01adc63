"""ADK's artifact contract over HTTP: the suite of tests/records/test_artifact_conformance.py
run once more, against RemoteArtifactService talking to a live memadmin server."""

import pytest

from memadmin_client import RemoteArtifactService
from tests.records.test_artifact_conformance import *  # noqa: F403 - the suite, collected here

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def service(remote_client):
    return RemoteArtifactService(client=remote_client)
