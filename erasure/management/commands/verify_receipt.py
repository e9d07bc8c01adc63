"""manage.py verify_receipt: check a receipt file's signature (or a legacy one's SHA-256)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from erasure import signing
from erasure.models import ErasureRequest
from memadmin_client import receipts


class Command(BaseCommand):
    help = (
        "Verify an erasure receipt: its Ed25519 signature against this server's published "
        "keys (or --keys FILE, a saved key set). Receipts made before signing are checked "
        "against the SHA-256 recorded for their request, and reported as unsigned."
    )

    def add_arguments(self, parser):
        parser.add_argument("receipt", type=Path, help="the receipt file (JSON)")
        parser.add_argument(
            "--keys",
            type=Path,
            help="a key set saved from /.well-known/memadmin-receipt-keys.json "
            "(default: this server's current and retired keys)",
        )

    def handle(self, *args, receipt: Path, keys: Path | None, **options):
        try:
            data = receipt.read_bytes()
            parsed = receipts.parse_receipt(data)
            if receipts.SIGNATURE not in parsed:
                return self._legacy(parsed, data)
            key_set = keys.read_bytes() if keys else signing.verifying_keys()
            verified = receipts.verify_receipt(parsed, key_set)
        except OSError as exc:
            raise CommandError(f"Cannot read {exc.filename}: {exc.strerror}.") from exc
        except receipts.ReceiptNotValid as exc:
            raise CommandError(f"REFUSED: {exc}") from exc
        except ImproperlyConfigured as exc:  # no key here: --keys still works
            raise CommandError(f"{exc} Or pass --keys with a saved key set.") from exc
        self.stdout.write(
            f"OK: receipt of erasure request {parsed.get('request_id')} is signed by "
            f"Ed25519 key {verified.key_id}."
        )

    def _legacy(self, parsed: dict, data: bytes) -> None:
        """A version 1 receipt: only this server's record of its digest vouches for it."""
        request_id = parsed.get("request_id")
        req = (
            ErasureRequest.objects.filter(pk=request_id).first()
            if isinstance(request_id, int) and not isinstance(request_id, bool)
            else None
        )
        digest = hashlib.sha256(data).hexdigest()
        if req is None or not req.receipt_sha256 or req.receipt_sha256 != digest:
            raise CommandError(
                "REFUSED: the receipt is unsigned, and its SHA-256 is not the one this "
                f"server recorded for request {request_id!r}."
            )
        self.stdout.write(
            f"UNSIGNED: made before receipts were signed. Its SHA-256 matches the one this "
            f"server recorded for erasure request {request_id}; only this server vouches "
            "for it, no third party can check it offline."
        )
