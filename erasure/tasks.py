"""Thin Celery tasks: the row is the truth, the message only a nudge."""

from celery import shared_task

from . import jobs


@shared_task(
    name="erasure.run_erasure",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_erasure(self, request_id: int) -> str:
    """Run or resume one erasure request. Duplicate deliveries find it claimed or done."""
    return jobs.run(int(request_id), task_id=self.request.id or "")


@shared_task(name="erasure.reconcile_erasures", ignore_result=True)
def reconcile_erasures() -> list[int]:
    """Re-queue erasures whose worker died or whose message was lost (Celery beat)."""
    return jobs.reconcile()
