from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "apps.observability"
    label = "observability"
    verbose_name = "Observability"

    def ready(self) -> None:
        from django.conf import settings

        from harness.observability import metrics

        # Servers and Celery workers alike: both load the apps before they do any work.
        metrics.configure(enabled=settings.METRICS_ENABLED, multiproc_dir=settings.PROMETHEUS_MULTIPROC_DIR or None)
