from django.urls import path

from apps.schedules import pages

urlpatterns = [
    path("", pages.schedules_page, name="schedules"),
]
