"""Every API route is reached by its own paths: no earlier pattern shadows it."""

import re

from django.urls import get_resolver
from django.urls.resolvers import URLResolver


def _routes(resolver, prefix=""):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def _sample(route: str) -> str:
    path = re.sub(r"<int:[^>]+>", "7", route)
    path = re.sub(r"<path:[^>]+>", "notes/a.txt", path)
    return "/" + re.sub(r"<[^>]+>", "x1", path)


def _view(func):
    return getattr(func, "view_class", None) or getattr(func, "cls", None) or func


def test_each_api_route_resolves_to_its_own_view():
    resolver = get_resolver()
    routes = [(route, pattern) for route, pattern in _routes(resolver) if route.startswith("api/")]
    assert len(routes) > 90
    shadowed = [(route, resolver.resolve(_sample(route)).route) for route, pattern in routes
                if _view(resolver.resolve(_sample(route)).func) is not _view(pattern.callback)]
    assert shadowed == []
