"""The Celery app. Tasks live in each app's ``tasks.py`` and are found by autodiscovery.

Beat reads its schedule from the database (django-celery-beat's DatabaseScheduler);
scheduled tasks keep their entries there (``apps.schedules.beat``). The broker is
chosen in ``deerflow_site/settings/services.py``.
"""

import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")

app = Celery("deerflow")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _tune_process(**_kwargs) -> None:
    # Workers execute runs: the same collector settings and CPU pinning as the servers
    # (deerflow_site/server/gc_tuning.py, deerflow_site/server/cpu_pinning.py), before the pool's threads start.
    from deerflow_site.server.cpu_pinning import pin_process
    from deerflow_site.server.gc_tuning import tune_gc

    pin_process()
    tune_gc()


@worker_init.connect
def _no_streams_here(**_kwargs) -> None:
    # A worker answers no HTTP or websocket: on the embedded stack the runs its beat firings
    # admit are offered to the servers, whose clients can then follow them live.
    from apps.runs.runtime import get_runtime

    get_runtime().serves_streams = False


@after_setup_logger.connect
@after_setup_task_logger.connect
def _structured_logs(logger=None, **_kwargs) -> None:
    # Celery keeps its own handlers and levels (--loglevel); the lines get the servers' format
    # (LOG_FORMAT), with the run and request ids of the task that wrote them.
    from deerflow_site.log_format import JsonFormatter, KeyValueFormatter

    formatter = JsonFormatter() if os.environ.get("LOG_FORMAT", "text") == "json" else KeyValueFormatter()
    for handler in getattr(logger, "handlers", ()):
        handler.setFormatter(formatter)
