from django.urls import path

from apps.memory import pages

urlpatterns = [path("", pages.memory_page, name="memory")]
