"""manage.py tune: the three policies that would have regretted least at no more storage
on the window's first part, each judged on its held-out last part."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from backtest import service, tune

from .backtest import _workers, window_end


class Command(BaseCommand):
    help = (
        "Search weights (on the simplex), half-life, fresh start and the presets for the "
        "lowest regret over the last N days at no more storage than the policy that ran. "
        "Reads only; apply a candidate on the Policies page."
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
        parser.add_argument("--until", metavar="ISO-DATETIME", help="end of the window")

    def handle(self, *args, app, days, until, workers, **options):
        try:
            now, end = window_end(until, days)
            result = tune.tune(app, days, now, workers=workers, until=end)
        except service.BacktestError as exc:
            raise CommandError(str(exc)) from exc
        w = self.stdout.write
        cur = result.current
        w(
            f"{app}: {result.tried} candidates"
            + (f" ({result.rounds_text()})" if result.samples else "")
            + f" over {result.start:%Y-%m-%d} to "
            f"{result.end:%Y-%m-%d}; the policy that ran: regret {cur.regret}, evictions "
            f"{cur.evictions}, {result.current_mean_tokens:.0f} tokens held a day on average"
            + ("" if result.exact else " (its replay is NOT exact: figures approximate)")
        )
        if result.held_out_from is None:
            w("The window is one day: nothing held out, so no candidate can be called better.")
        else:
            w(
                f"Ranked on the days before {result.held_out_from:%Y-%m-%d}; judged against "
                f"the policy that ran on the held-out days from then on (regret "
                f"{result.current_held_out.regret} there)."
            )
        if not result.best:
            w("No candidate held no more than the policy that ran.")
        for rank, c in enumerate(result.best, start=1):
            changes = ", ".join(f"{f} {old} -> {new}" for f, (old, new) in c.changes.items())
            w(
                f"{rank}. {c.label}: regret {c.totals.regret} ({c.totals.regret - cur.regret:+d}), "
                f"evictions {c.totals.evictions} ({c.totals.evictions - cur.evictions:+d}), "
                f"{c.mean_tokens:.0f} tokens held a day; change: {changes or 'none'}; "
                f"held out: searches only it regrets {c.held_out.regret_more}, only the "
                f"policy that ran {c.held_out.regret_fewer}: "
                + ("better" if result.beats_current(c) else "not better beyond chance")
            )
        w("Nothing was applied: change the policy on the Policies page (preview, version, audit).")
