from django.urls import path

from apps.console.views import landing

urlpatterns = [
    path("", landing, name="landing"),
]
