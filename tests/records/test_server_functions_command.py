"""``manage.py server_functions`` where there are none: SQLite (the PostgreSQL side is in
``test_server_functions``)."""

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.django_db
def test_on_sqlite_the_command_says_there_are_none(on_postgres):
    if on_postgres:
        pytest.skip("SQLite only: on PostgreSQL see test_server_functions")
    with pytest.raises(CommandError, match="PostgreSQL only"):
        call_command("server_functions")
    with pytest.raises(CommandError, match="PostgreSQL only"):
        call_command("server_functions", "--drop")
