"""Long runs in management commands: queued for the workers, or run here with a small
text progress bar."""

from collections.abc import Callable

from django.core.management.base import CommandError

from sweeper.models import Run
from sweeper.tasks import run_inline


def progress_printer(stdout, width: int = 30):
    def show(run) -> None:
        total = run.total or 1
        filled = int(width * run.done / total)
        bar = "#" * filled + "-" * (width - filled)
        stdout.write(f"\r[{bar}] {run.done}/{run.total}", ending="")
        stdout.flush()
        if run.done >= run.total:
            stdout.write("")

    return show


def queue_or_run(stdout, run: Run, *, background: bool, would: Callable[[Run], str]) -> None:
    """Say that ``run`` is queued (``background``: its message is sent), or run it here
    with a progress bar and print its result, with ``would(run)`` for a dry-run. A
    failed run fails the command."""
    if background:
        stdout.write(f"Queued run #{run.id}.")
        return
    run = run_inline(run, progress_printer(stdout))
    stdout.write(f"\nRun #{run.id}: {run.status}. {run.stats}")
    if run.dry_run:
        stdout.write(would(run))
    if run.error:
        raise CommandError(run.error)
