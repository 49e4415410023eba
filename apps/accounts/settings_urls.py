"""``/settings/``: the hub. Other settings pages mount under /settings/ from their own apps."""

from django.urls import path

from apps.accounts.settings_hub import settings_hub

urlpatterns = [
    path("", settings_hub, name="settings-hub"),
]
