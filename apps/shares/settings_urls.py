from django.urls import path

from apps.shares import pages

# Mounted under /settings/.
urlpatterns = [
    path("shares", pages.shares_settings, name="shares-settings"),
]
