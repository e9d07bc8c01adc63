"""Output paths of management commands, checked before the work they report on."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import CommandError


def check_writable(path: str, option: str) -> None:
    """Refuse a path ``option`` names that a file could not be written to: before the
    command replays a history or erases a user, not after (when it could only crash)."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise CommandError(f"{option} {path} is a folder; give a file path.")
    if not folder.is_dir():
        raise CommandError(f"{option} {path}: the folder {folder} does not exist.")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise CommandError(f"{option} {path}: not writable here.")
