"""manage.py sweep / enforce: a run limited to an app memadmin never saw is refused."""

import io

import pytest
from django.core.management import CommandError, call_command

from records.models import Policy, PolicyVersion
from sweeper.models import Run
from tests.records.rows import make_record

pytestmark = pytest.mark.django_db


def command(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    "args",
    [
        ("sweep", "--app", "pharmacy-typo"),
        ("sweep", "--app", "pharmacy-typo", "--dry-run"),
        ("enforce", "--app", "pharmacy-typo"),
        ("enforce", "--app", "pharmacy-typo", "--dry-run"),
        ("enforce", "--app", "pharmacy-typo", "--user", "alice"),
        ("rescore", "--app", "pharmacy-typo"),
    ],
)
def test_an_unknown_app_is_refused_with_the_known_ones_and_creates_nothing(args):
    make_record("pharmacy", "alice")
    with pytest.raises(CommandError) as refused:
        command(*args)
    message = str(refused.value)
    assert "No app named 'pharmacy-typo'" in message and "known apps: pharmacy" in message
    assert not Policy.objects.filter(app_name="pharmacy-typo").exists()
    assert not PolicyVersion.objects.filter(app_name="pharmacy-typo").exists()
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # A dry-run plans the app: applying it would evict other users' records too.
        (("enforce", "--app", "pharmacy", "--user", "alice", "--dry-run"), "not one user"),
        # Well-formed, but no such day.
        (("sweep", "--dry-run", "--as-of", "2027-02-30T00:00"), "ISO date or datetime"),
    ],
)
def test_command_combinations_that_cannot_mean_what_they_say_are_refused(args, message):
    make_record("pharmacy", "alice")
    with pytest.raises(CommandError, match=message):
        command(*args)
    assert not Run.objects.exists()


def test_a_known_app_and_every_app_still_run():
    make_record("pharmacy", "alice")
    assert "done" in command("enforce", "--app", "pharmacy")
    assert "done" in command("sweep", "--dry-run")
    assert "Evicted 0 record(s) of pharmacy/alice" in command(
        "enforce", "--app", "pharmacy", "--user", "alice"
    )
    assert Run.objects.count() == 2


def test_a_dry_run_says_what_it_would_do_and_async_only_queues():
    make_record("pharmacy", "alice")
    out = command("enforce", "--app", "pharmacy", "--dry-run")
    run = Run.objects.latest("id")
    assert f"Run #{run.id}: done." in out
    assert f"Would evict 0 record(s). Apply with: manage.py sweep --apply {run.id}" in out
    out = command("sweep", "--dry-run")
    run = Run.objects.latest("id")
    assert "Would retire 0 session(s) and evict 0 record(s). " in out
    assert f"Apply with: manage.py sweep --apply {run.id}" in out

    out = command("sweep", "--async")  # its message goes once committed: never, here
    run = Run.objects.latest("id")
    assert out.strip() == f"Queued run #{run.id}." and run.status == "queued"
