"""manage.py erase: submit (and optionally run) an erasure from the command line."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from erasure import jobs
from erasure.models import ErasureRequest, ErasureStatus
from memadmin.command_paths import check_writable


class Command(BaseCommand):
    help = (
        "Erase one end user's data (one app, or all apps): submit an erasure request, "
        "then run it here (--wait) or let a Celery worker run it."
    )

    def add_arguments(self, parser):
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--app", help="the app whose data of the user is erased")
        scope.add_argument("--all-apps", action="store_true", help="erase the user in every app")
        parser.add_argument("--user", required=True, help="the user id, exactly as agents use it")
        parser.add_argument("--ticket", required=True, help="compliance ticket reference")
        parser.add_argument("--reason", required=True, help="why (no personal data: it is kept)")
        parser.add_argument(
            "--wait", action="store_true", help="run the job in this process and report"
        )
        parser.add_argument(
            "--receipt", metavar="PATH", help="with --wait: write the receipt (JSON) here"
        )
        parser.add_argument(
            "--no-input",
            action="store_true",
            help="do not ask to type the user id again (for scripts)",
        )

    def handle(
        self,
        *args,
        app=None,
        all_apps=False,
        user,
        ticket,
        reason,
        wait,
        receipt,
        no_input,
        **options,
    ):
        if receipt and not wait:
            raise CommandError("--receipt needs --wait (the receipt exists once verified).")
        if receipt:
            check_writable(receipt, "--receipt")  # before erasing, which cannot be undone
        again = user
        if not no_input:
            if not sys.stdin.isatty():
                raise CommandError("Type the user id again interactively, or pass --no-input.")
            again = input("Type the user id again to confirm: ")
        actor = f"{getpass.getuser()} via manage.py erase"
        try:
            req = jobs.submit(
                app_name=None if all_apps else app,
                user_id=user,
                user_id_again=again,
                ticket=ticket,
                reason=reason,
                actor=actor,
                enqueue_job=not wait,
            )
        except jobs.ErasureRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Erasure #{req.pk} submitted: {req.scope_label}, ticket {req.ticket}, "
            f"job {req.job_id}."
        )
        if not wait:
            self.stdout.write(
                "A Celery worker will run it; follow it on the erasure pages "
                f"(/erasure/{req.pk}/) or run this command again with --wait next time."
            )
            return
        self.stdout.write("Running it here…")
        status = jobs.run(req.pk, task_id="manage.py erase")
        req = ErasureRequest.objects.get(pk=req.pk)
        self._report(req)
        if status != ErasureStatus.VERIFIED:
            raise CommandError(f"Erasure #{req.pk} {req.status}: {req.failure_reason}")
        if receipt:
            try:
                Path(receipt).write_bytes(jobs.receipt_bytes(req.receipt))
            except OSError as exc:  # the erasure is done: say so, and where the receipt is
                raise CommandError(
                    f"Erasure #{req.pk} is verified, but its receipt could not be written to "
                    f"{receipt} ({exc.strerror}): download it from /erasure/{req.pk}/."
                ) from exc
            self.stdout.write(
                f"Receipt written to {receipt} (SHA-256 {req.receipt_sha256}), signed with "
                f"Ed25519 key {req.receipt['signature']['key_id']}: "
                f"manage.py verify_receipt {receipt} checks it."
            )

    def _report(self, req):
        width = max((len(k) for k in req.progress), default=10)
        for label, p in req.progress.items():
            left = req.verification.get(label, {}).get("remaining")
            note = f"  ({p['note']})" if p.get("note") else ""
            self.stdout.write(
                f"  {label:<{width}}  {p.get('deleted', 0):>9,} deleted in "
                f"{p.get('batches', 0)} batch(es); left: {left}{note}"
            )
        if req.status == ErasureStatus.VERIFIED:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Verified: every store was searched again and nothing of the subject is "
                    f"left. Status {req.status}; the user id was removed from the request."
                )
            )
        else:
            self.stdout.write(self.style.ERROR(f"Status {req.status}: {req.failure_reason}"))
