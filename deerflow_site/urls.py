"""Top-level URLs: admin, the API under /api/, the UI pages."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.console.views import HealthView

urlpatterns = [
    # Scheduled tasks were under the runs app in admin; old bookmarks and links still land.
    re_path(r"^admin/runs/(?P<model>scheduledtask(?:run)?)/(?P<rest>.*)$",
            RedirectView.as_view(url="/admin/schedules/%(model)s/%(rest)s", permanent=True, query_string=True)),
    path("admin/", admin.site.urls),
    # Pages without our <link rel="icon"> (the admin, raw API responses) still get one.
    path("favicon.ico", RedirectView.as_view(url=static("site/favicon.ico"), permanent=True)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema", template_name="api/docs.html"), name="api-docs"),
    # DeerFlow's LangGraph base URL (its nginx rewrote /api/langgraph/<x> to /api/<x>): the same
    # routes and views, namespaced so reverse() keeps giving the /api/ paths. First, so its
    # requests do not try every /api/ pattern before theirs (one prefix check for the others).
    path("api/langgraph/", include(("deerflow_site.api_urls", "langgraph"), namespace="langgraph")),
    # DeerFlow's frontend signs in here, as with its own gateway.
    path("api/v1/auth/", include("apps.accounts.deerflow_urls")),
    path("api/", include("deerflow_site.api_urls")),
    # DeerFlow's gateway liveness route, beside our /api/health.
    path("health", HealthView.as_view(), name="health"),
    path("schedules/", include("apps.schedules.page_urls")),
    path("settings/", include("apps.accounts.settings_urls")),
    path("settings/", include("apps.mcp.page_urls")),
    path("settings/", include("apps.channels.page_urls")),
    path("settings/", include("apps.shares.settings_urls")),
    # Shared chats: read-only snapshots anyone with the link may open (apps/shares).
    path("s/", include("apps.shares.page_urls")),
    path("skills/", include("apps.skills.page_urls")),
    path("agents/", include("apps.agents.page_urls")),
    path("memory/", include("apps.memory.page_urls")),
    path("knowledge/", include("apps.knowledge.page_urls")),
    path("approvals/", include("apps.governance.page_urls")),
    path("observability/", include("apps.observability.page_urls")),
    path("accounts/", include("apps.accounts.urls")),
    path("", include("apps.chat.page_urls")),
    path("", include("apps.console.urls")),
]

# Our own pages for errors (JSON under /api/): Django's debug pages are for developers only
# (DEERFLOW_DEBUG_PAGES), never for the product's users.
handler404 = "deerflow_site.error_pages.not_found"
handler500 = "deerflow_site.error_pages.server_error"
