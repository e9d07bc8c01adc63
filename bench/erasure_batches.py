"""Erasing one subject with 100k memory records: batched job vs one DELETE (baseline).

    DATABASE_URL=postgres://... python bench/erasure_batches.py [--records 100000]

Uses the configured database (migrate it first); creates and erases its own subject.
The baseline deletes the same rows with one unbatched DELETE, which holds its locks for
the whole statement: the job should cost a small multiple of it, not an order more.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from erasure import jobs  # noqa: E402
from records.models import MemoryRecord  # noqa: E402

APP, USER = "bench-erasure", "bench-subject"


def fill(n: int) -> None:
    now = timezone.now()
    MemoryRecord.objects.bulk_create(
        (
            MemoryRecord(
                app_name=APP,
                user_id=USER,
                content=f"bench note {i} about things",
                created_at=now,
                last_accessed_at=now,
                tokens=6,
            )
            for i in range(n)
        ),
        batch_size=5000,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    n = parser.parse_args().records

    fill(n)
    start = time.perf_counter()
    MemoryRecord.objects.filter(app_name=APP, user_id=USER).delete()
    baseline = time.perf_counter() - start

    fill(n)
    req = jobs.submit(
        app_name=APP,
        user_id=USER,
        user_id_again=USER,
        ticket="BENCH",
        reason="benchmark",
        actor="bench",
        enqueue_job=False,
    )
    start = time.perf_counter()
    status = jobs.run(req.pk)
    job = time.perf_counter() - start
    req.refresh_from_db()
    batches = req.progress["records.MemoryRecord"]["batches"]

    print(f"{'what':<44} {'seconds':>8} {'ratio':>6}")
    baseline_label = f"one DELETE of {n:,} records (baseline)"
    print(f"{baseline_label:<44} {baseline:>8.2f} {1:>6.2f}")
    label = f"erasure job, {batches} batches, verified"
    print(f"{label:<44} {job:>8.2f} {job / baseline:>6.2f}")
    assert status == "verified", req.failure_reason


if __name__ == "__main__":
    main()
