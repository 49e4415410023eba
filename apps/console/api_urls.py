from django.urls import path

from apps.console.views import HealthView

urlpatterns = [
    path("health", HealthView.as_view(), name="api-health"),
]
