from celery import shared_task


@shared_task(name="apps.memory.tasks.update_memory", ignore_result=True, acks_late=True)
def update_memory(job: dict, token: str) -> None:
    from apps.memory.updates import process_if_latest

    process_if_latest(job, token)
