"""A deleted task takes its beat entry along, however it was deleted (API, admin, a user
deletion cascading): beat must never fire a task that no longer exists."""

from django.db.models.signals import post_delete
from django.dispatch import receiver

from apps.schedules.models import ScheduledTask
from apps.schedules import beat


@receiver(post_delete, sender=ScheduledTask, dispatch_uid="scheduled-task-beat-entry")
def _remove_beat_entry(sender, instance: ScheduledTask, **kwargs) -> None:
    beat.beat_remove(instance.pk, instance.periodic_task_id)
