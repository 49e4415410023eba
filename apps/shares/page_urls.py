from django.urls import path

from apps.shares import pages

# Mounted at /s/ (the public snapshot and its files).
urlpatterns = [
    path("<str:token>/", pages.shared_chat, name="shared-chat"),
    path("<str:token>/files/<path:path>", pages.shared_file, name="shared-file"),
]
