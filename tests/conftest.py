import os

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from memadmin.accounts import ensure_role_groups


def pytest_collection_modifyitems(config, items):
    """Skip tests whose real service is not configured (the embedded default run)."""
    from django.conf import settings

    skip_redis = pytest.mark.skip(reason="needs Redis: set CELERY_BROKER_URL/REDIS_URL")
    skip_pg = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://...")
    for item in items:
        if "redis" in item.keywords and not settings.REDIS_URL:
            item.add_marker(skip_redis)
        if "postgres" in item.keywords and settings.DATABASES["default"]["ENGINE"].endswith(
            "sqlite3"
        ):
            item.add_marker(skip_pg)


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def make_user(db):
    groups = None

    def make(username: str, *roles: str, superuser: bool = False, password: str = "pw-Secret-123"):
        nonlocal groups
        groups = groups or ensure_role_groups()
        User = get_user_model()
        if superuser:
            user = User.objects.create_superuser(username, f"{username}@example.com", password)
        else:
            user = User.objects.create_user(username, password=password)
        for role in roles:
            user.groups.add(groups[role])
        return user

    return make


@pytest.fixture
def login(client, make_user):
    """login('support') -> a test client logged in as a fresh user holding that role."""

    def do(*roles: str, superuser: bool = False, username: str | None = None):
        user = make_user(username or ("-".join(roles) or "norole"), *roles, superuser=superuser)
        client.force_login(user)
        return client

    return do


@pytest.fixture(scope="session")
def project_env():
    """Environment for subprocesses (workers, manage.py) that matches this test run."""
    return dict(os.environ)


@pytest.fixture(autouse=True)
def _plain_http_test_client(settings):
    """The test client speaks plain HTTP; in production TLS ends at the proxy."""
    settings.SECURE_SSL_REDIRECT = False
