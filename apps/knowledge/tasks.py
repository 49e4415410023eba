from celery import shared_task

from apps.knowledge.ingestion import document_ingest


@shared_task(name="apps.knowledge.tasks.ingest_document", ignore_result=True, acks_late=True, time_limit=3600)
def ingest_document(document_id: str) -> None:
    document_ingest(document_id=document_id)
