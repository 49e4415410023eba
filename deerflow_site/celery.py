"""The Celery app. Tasks live in each app's ``tasks.py`` and are found by autodiscovery.

Beat reads its schedule from the database (django-celery-beat's DatabaseScheduler);
scheduled tasks keep their entries there (``apps.runs.scheduling.beat``). The broker is
chosen in ``deerflow_site/settings/services.py``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")

app = Celery("deerflow")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
