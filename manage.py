#!/usr/bin/env python3
"""Django's command-line utility for memadmin."""

import os
import sys

if sys.version_info < (3, 12):  # noqa: UP036 - the point is a clear message on old Pythons
    sys.exit(
        f"memadmin needs Python 3.12 or newer (Django 6); this is {sys.version.split()[0]}. "
        "Use `make run` / `make test`, which create a suitable virtual environment."
    )


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
