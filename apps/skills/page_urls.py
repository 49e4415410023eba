from django.urls import path

from apps.skills import pages

urlpatterns = [
    path("", pages.skills_page, name="skills"),
]
