"""The site's URLs without the Connections page: a site where that section's app is absent."""

from django.urls import URLPattern, URLResolver

from deerflow_site.urls import urlpatterns as site_urlpatterns


def _without_connections(patterns):
    kept = []
    for entry in patterns:
        if isinstance(entry, URLPattern) and entry.name == "channel-connections-page":
            continue
        if isinstance(entry, URLResolver):
            entry = URLResolver(entry.pattern, _without_connections(entry.url_patterns), entry.default_kwargs,
                                entry.app_name, entry.namespace)
        kept.append(entry)
    return kept


urlpatterns = _without_connections(site_urlpatterns)
