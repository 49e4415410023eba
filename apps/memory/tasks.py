from celery import shared_task

from apps.memory.learning import process_if_latest


@shared_task(name="apps.memory.tasks.update_memory", ignore_result=True, acks_late=True)
def update_memory(job: dict, token: str) -> None:
    process_if_latest(job, token)
