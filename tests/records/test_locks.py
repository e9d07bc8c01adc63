import threading

import pytest
from django.db import connection, connections, transaction

from records.locks import acquire_user_lock, user_lock, user_lock_key


def test_lock_keys_are_stable_and_distinct_per_app_and_user():
    assert user_lock_key("a", "u") == user_lock_key("a", "u")
    assert (
        len(
            {
                user_lock_key("a", "u"),
                user_lock_key("a", "v"),
                user_lock_key("b", "u"),
                user_lock_key("au", ""),
            }
        )
        == 4
    )


@pytest.mark.django_db(transaction=True)
def test_acquire_outside_a_transaction_is_a_programming_error():
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        acquire_user_lock("a", "u")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_second_connection_cannot_take_a_held_user_lock_until_commit():
    held, release, results = threading.Event(), threading.Event(), {}

    def holder():
        with user_lock("app", "alice"):
            held.set()
            release.wait(timeout=30)
        connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(timeout=30)
    key = user_lock_key("app", "alice")
    other = user_lock_key("app", "bob")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s), pg_try_advisory_xact_lock(%s)", [key, other]
        )
        results["while_held"] = cursor.fetchone()
    release.set()
    thread.join(timeout=30)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [key])
        results["after"] = cursor.fetchone()[0]
    assert results["while_held"] == (False, True)  # alice is locked, bob is not
    assert results["after"] is True
