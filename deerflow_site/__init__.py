"""The Django project: settings, URLs, ASGI routing and the Celery app."""

from deerflow_site.celery import app as celery_app

__all__ = ["celery_app"]
