"""manage.py backtest: what a candidate policy would have done over the last N days."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from backtest import service
from memadmin.command_paths import check_writable
from records.policy import PRESETS


class Command(BaseCommand):
    help = (
        "Replay an app's access history under a candidate policy and compare it with "
        "what the policy that ran did: evictions, records and tokens held, and regret per "
        "day. Reads only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app", required=True, help="the app, exactly as agents name it")
        parser.add_argument("--days", type=int, required=True, help="how many days back")
        parser.add_argument(
            "--workers",
            type=_workers,
            default=1,
            help="processes replaying users (default 1; the results are the same)",
        )
        parser.add_argument("--preset", choices=sorted(PRESETS), help="the preset's scoring")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="FIELD=VALUE",
            help="a policy value of the candidate (repeatable), e.g. w_recency=0.6",
        )
        parser.add_argument("--json", metavar="PATH", help="also write the report here")
        parser.add_argument(
            "--until",
            metavar="ISO-DATETIME",
            help="end of the window (default: now); the window is the --days before it",
        )

    def handle(self, *args, app, days, preset, set, json: str | None, until, workers, **options):  # noqa: A002
        if json:
            check_writable(json, "--json")  # before the replay, not after it
        try:
            now, end = window_end(until, days)
            values = service.parse_sets(set)
            candidate = service.candidate_policy(app, preset=preset, values=values)
            report = service.run(app, days, candidate, now, workers=workers, until=end)
        except service.BacktestError as exc:
            raise CommandError(str(exc)) from exc
        self._table(report)
        if json:
            try:
                Path(json).write_text(_dumps(report.as_json()))
            except OSError as exc:
                raise CommandError(f"Cannot write the report to {json}: {exc.strerror}.") from exc
            self.stdout.write(f"Report written to {json}.")

    def _table(self, report: service.Report) -> None:
        w = self.stdout.write
        w(
            f"{report.app_name}: {report.start:%Y-%m-%d %H:%M} to {report.end:%Y-%m-%d %H:%M} "
            f"UTC, {report.users} user(s); current / candidate"
        )
        w(
            f"{'day':<10}  {'evictions':>13}  {'records held':>17}  {'tokens held':>19}  "
            f"{'searches':>8}  {'regret':>11}  {'lost':>5}  {'saved':>5}"
        )
        for row in report.days:
            c, k = row.current, row.candidate
            w(
                f"{row.day.isoformat():<10}  {_pair(c.evictions, k.evictions):>13}  "
                f"{_pair(c.records, k.records):>17}  {_pair(c.tokens, k.tokens):>19}  "
                f"{c.searches:>8}  {_pair(c.regret, k.regret):>11}  {k.lost:>5}  {k.saved:>5}"
            )
        for at, version in report.policy_changes:
            w(f"policy changed to version {version} at {at:%Y-%m-%d %H:%M}")
        e = report.exactness
        verdict = "exact" if e.exact else "NOT exact"
        older = f", {e.without_metadata} from before the history was kept"
        sample = (
            ""
            if e.checked_users == report.users
            else f" (checked on {e.checked_users} of {report.users} users)"
        )
        w(
            f"Replay of the policy that ran{sample}: {verdict}: {e.reproduced} of {e.real} "
            f"evictions reproduced, {e.extra} extra{older if e.without_metadata else ''}."
        )


def _pair(current: int, candidate: int) -> str:
    return f"{current} / {candidate}"


clock = timezone.now  # the commands' "now" (tests fix it at their history's end)


def window_end(until: str | None, days: int) -> tuple[datetime, datetime | None]:
    """(now, the window's end if ``--until`` sets it): ``--until`` no later than now and
    within the history kept (``service.check_until``)."""
    now = clock()
    if not until:
        return now, None
    end = parse_moment(until)
    service.check_until(end, days, now)
    return now, end


def parse_moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise service.BacktestError(f"--until must be an ISO date and time, not {text!r}.") from exc
    if not moment.tzinfo:
        moment = moment.replace(tzinfo=UTC)
    try:  # in UTC, as every figure is printed
        return moment.astimezone(UTC)
    except OverflowError:
        raise service.BacktestError(f"--until is not a date UTC can hold: {text!r}.") from None


def _dumps(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


MAX_WORKERS = 16


def _workers(text: str) -> int:
    """--workers: a whole number from 1 to MAX_WORKERS (argparse reports the message)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"--workers takes a whole number from 1 to {MAX_WORKERS}, not {text!r}."
        )
    return n
