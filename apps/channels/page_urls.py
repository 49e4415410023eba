from django.urls import path

from apps.channels import pages

urlpatterns = [
    path("connections", pages.connections_page, name="channel-connections-page"),
]
