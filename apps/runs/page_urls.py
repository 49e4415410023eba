from django.urls import path

from apps.runs import schedule_pages

urlpatterns = [
    path("", schedule_pages.schedules_page, name="schedules"),
]
