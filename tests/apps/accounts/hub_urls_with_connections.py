"""The site's URLs plus a Connections page, as the branch building it will add one."""

from django.http import HttpResponse
from django.urls import path

from deerflow_site.urls import urlpatterns as site_urlpatterns

urlpatterns = [path("settings/connections", lambda request: HttpResponse("connections"), name="settings-connections"), *site_urlpatterns]
