"""manage.py sweep / enforce: a run limited to an app memadmin never saw is refused."""

import io
from datetime import timedelta
from datetime import timezone as dt_timezone

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from records.models import Policy, PolicyVersion
from sweeper import plans, runs
from sweeper.models import Run, RunKind
from tests.records.rows import make_record

from .helpers import make_session

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


def test_as_of_is_judged_by_its_date_in_utc_whatever_its_offset():
    """An hour from now written at UTC-14 may fall on yesterday's date there: it is
    still the future. A day ago written at UTC+14 may fall on today's date there: it is
    still the past. (At every hour of the day one of the two shows a date read in the
    offset's zone.)"""
    make_record("pharmacy", "alice")
    now = timezone.now()
    ahead = (now + timedelta(hours=1)).astimezone(dt_timezone(timedelta(hours=-14)))
    assert "done" in command("sweep", "--dry-run", "--as-of", ahead.isoformat())
    past = (now - timedelta(days=1)).astimezone(dt_timezone(timedelta(hours=14)))
    with pytest.raises(CommandError, match="must be from today"):
        command("sweep", "--dry-run", "--as-of", past.isoformat())


def test_a_dry_run_of_an_app_with_sessions_only_creates_no_policy():
    make_session("sessions-only", "alice", "s1", ["My name is Ana"], idle_days=30)
    assert "Would retire 1 session(s)" in command("sweep", "--dry-run")
    assert not Policy.objects.filter(app_name="sessions-only").exists()
    assert not PolicyVersion.objects.filter(app_name="sessions-only").exists()


def test_applying_a_plan_someone_else_applied_meanwhile_is_refused_with_a_message(monkeypatch):
    """The check passes, then another apply of the same plan lands before this one is
    created (the window between the two, played here by wrapping the real check): the
    database keeps one apply, and the command says so instead of a traceback."""
    make_session("pharmacy", "alice", "s1", ["My name is Ana"], idle_days=30)
    command("sweep", "--dry-run")
    plan = Run.objects.get(dry_run=True)
    checked = plans.check_appliable

    def check_then_lose_the_race(run):
        checked(run)
        runs.create_run(RunKind.APPLY, plan=run, enqueue=False)

    monkeypatch.setattr(plans, "check_appliable", check_then_lose_the_race)
    with pytest.raises(CommandError, match=f"dry-run #{plan.pk} was applied already"):
        command("sweep", "--apply", str(plan.pk))
    assert Run.objects.filter(plan=plan).count() == 1
