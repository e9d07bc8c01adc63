"""A small text progress bar for long runs in management commands."""


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
