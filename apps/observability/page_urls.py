from django.urls import path

from apps.observability import pages

urlpatterns = [path("", pages.observability_page, name="observability")]
