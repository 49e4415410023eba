from django.urls import path

from apps.agents import pages

urlpatterns = [
    path("", pages.agents_page, name="agents"),
]
