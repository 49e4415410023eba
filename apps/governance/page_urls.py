from django.urls import path

from apps.governance import pages

urlpatterns = [path("", pages.approvals_page, name="approvals")]
