"""manage.py receipt_keys: show, generate and rotate the keys that sign erasure receipts."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from erasure import signing


class Command(BaseCommand):
    help = (
        "show: print the published key set; generate PATH: write a new private key (mode "
        "0600) for MEMADMIN_RECEIPT_SIGNING_KEY(_FILE); rotate: a new key in the key file, "
        "the old public key kept published."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("show", help="print the key set served at the well-known URL")
        generate = sub.add_parser("generate", help="write a new private key to PATH")
        generate.add_argument("path", type=Path)
        sub.add_parser("rotate", help="replace the key in the key file, keep the old published")

    def handle(self, *args, action: str, path: Path | None = None, **options):
        try:
            if action == "show":
                self.stdout.write(json.dumps(signing.published_keys(), indent=2))
            elif action == "generate":
                self._generate(path)
            else:
                retired, current = signing.rotate()
                if retired:
                    self.stdout.write(f"Retired key {retired} (still published).")
                self.stdout.write(f"New receipts are signed with key {current}.")
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"{exc.filename}: {exc.strerror}.") from exc

    def _generate(self, path: Path) -> None:
        if path.exists():
            raise CommandError(f"{path} exists: a key is never overwritten.")
        key = signing.write_new_key(path)
        self.stdout.write(
            f"Wrote a new Ed25519 key {signing.receipts.key_id(key.public_key())} to {path} "
            "(mode 0600). Point MEMADMIN_RECEIPT_SIGNING_KEY_FILE at it, or put its one-line "
            "body (the line between the PEM's BEGIN and END) in MEMADMIN_RECEIPT_SIGNING_KEY."
        )
