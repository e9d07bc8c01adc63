"""Keep run accounting right when items disappear (erasure deletes items naming a user)."""

from django.db.models import F
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from .models import ItemStatus, Run, RunStatus, WorkItem


@receiver(post_delete, sender=WorkItem)
def planned_item_deleted(sender, instance: WorkItem, **kwargs) -> None:
    if instance.status != ItemStatus.PLANNED:
        return  # already counted in done
    Run.objects.filter(id=instance.run_id, total__gt=0).update(total=F("total") - 1)
    Run.objects.filter(id=instance.run_id, status=RunStatus.RUNNING, done__gte=F("total")).update(
        status=RunStatus.DONE, finished_at=timezone.now()
    )
