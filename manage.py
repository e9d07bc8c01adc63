#!/usr/bin/env python3
"""Django's command-line utility for memadmin."""

import os
import sys

if sys.version_info < (3, 12):  # noqa: UP036 - the point is a clear message on old Pythons
    sys.exit(
        f"memadmin needs Python 3.12 or newer (Django 6); this is {sys.version.split()[0]}. "
        "Use `make run` / `make test`, which create a suitable virtual environment."
    )


def _undecodable(argv: list[str]) -> int | None:
    """The position of the first argument that is not valid UTF-8 (Python hands its bytes
    over as lone surrogates, which no database or hash takes), if any."""
    for position, arg in enumerate(argv[1:], start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return position
    return None


def main() -> None:
    position = _undecodable(sys.argv)
    if position is not None:
        sys.exit(
            f"manage.py: argument {position} is not valid UTF-8 text; nothing was done. "
            "Check the terminal's encoding, or how the argument was made."
        )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
