"""Every URL route with its auth rule, read from the URL conf and the views' own attributes.

Used by ``manage.py auth_routes`` and by the route tests, so the published list cannot drift
from what the code does. The rules:

- ``public``: DRF view whose permissions let anyone in (AllowAny), or a Django view marked
  ``login_not_required`` (allauth marks its sign-in, sign-up and reset pages so).
- ``session``: a signed-in browser. DRF views with the default permissions, and Django views
  wrapped in ``login_required``.
- ``session | token <scope>``: a DRF view (or an ``accepts_tokens`` plain view) whose
  ``token_scopes`` admit personal access tokens for that method.
- ``staff`` / ``staff | token: <scope>``: a DRF view for staff only (``IsStaff``), by a staff
  member's session, or their token with the listed scope (``admin``).
- ``admin``: Django admin (staff session).
- ``page``: a Django view with no login marker; it decides per request (e.g. the landing page).
- ``session (websocket)``: Channels routes (``deerflow_site.routing``); asgi.py authenticates
  sockets by the session cookie only, and consumers close unauthenticated ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.permissions import AllowAny, IsAdminUser
from rest_framework.views import APIView

from apps.accounts.authentication import PersonalAccessTokenAuthentication
from apps.accounts.permissions import ANY_SCOPE, TokenScopePermission, view_token_scopes

_SAFE_EXTRA = {"HEAD", "OPTIONS"}


@dataclass(frozen=True)
class Route:
    path: str  # "/api/tokens/<int:token_id>/", as written in the URL conf
    methods: tuple[str, ...]  # the methods the view implements (HEAD/OPTIONS left out), () if any
    rule: str
    view: str  # dotted name of the view, for the reader
    name: str = ""
    namespace: str = ""
    callback: object = field(default=None, compare=False, repr=False)

    @property
    def accepts_tokens(self) -> bool:
        return "token" in self.rule


def _pattern_text(pattern) -> str:
    text = str(pattern.pattern)
    # Regex patterns (allauth's OIDC prefix, admin's app index) read better without anchors.
    text = text.removeprefix("^")
    for anchor in ("\\Z", "$"):
        text = text.removesuffix(anchor)
    return text


def _walk(patterns, prefix: str = "", namespace: str = ""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            ns = entry.namespace or namespace
            yield from _walk(entry.url_patterns, prefix + _pattern_text(entry), ns)
        elif isinstance(entry, URLPattern):
            yield "/" + prefix + _pattern_text(entry), entry, namespace


def _view_name(callback) -> str:
    target = getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback
    return f"{target.__module__}.{getattr(target, '__qualname__', getattr(target, '__name__', repr(target)))}"


def _drf_methods(callback) -> tuple[str, ...]:
    actions = getattr(callback, "actions", None)  # viewsets: the router's method -> action map
    if actions:
        return tuple(sorted(m.upper() for m in actions))
    cls = callback.cls
    return tuple(m.upper() for m in cls.http_method_names if hasattr(cls, m) and m.upper() not in _SAFE_EXTRA)


def _token_rule(token_scopes: dict | None, methods: tuple[str, ...]) -> str:
    admitted = [(m, token_scopes[m]) for m in methods if token_scopes and m in token_scopes]
    if not admitted:
        return ""
    return ", ".join(f"{m} {'any scope' if scope is ANY_SCOPE else scope}" for m, scope in admitted)


def _drf_rule(callback, methods) -> str:
    cls = callback.cls
    initkwargs = getattr(callback, "initkwargs", {}) or {}
    permissions = initkwargs.get("permission_classes", cls.permission_classes)
    authentications = initkwargs.get("authentication_classes", cls.authentication_classes)
    if not permissions or all(p is AllowAny for p in permissions):
        return "public"
    token_ok = any(issubclass(a, PersonalAccessTokenAuthentication) for a in authentications) and any(
        isinstance(p, type) and issubclass(p, TokenScopePermission) for p in permissions
    )
    token_text = _token_rule(view_token_scopes(callback), methods) if token_ok else ""
    who = "staff" if any(p is IsAdminUser or (isinstance(p, type) and issubclass(p, IsAdminUser)) for p in permissions) else "session"
    return f"{who} | token: {token_text}" if token_text else who


def _django_rule(callback, namespace: str, methods) -> str:
    if namespace == "admin":
        return "public" if getattr(callback, "login_required", None) is False else "admin"
    token_text = _token_rule(view_token_scopes(callback), methods or ("GET", "POST", "PUT", "PATCH", "DELETE"))
    if getattr(callback, "login_required", None) is False:
        return "public"
    # user_passes_test (login_required, staff_member_required) leaves these on the wrapper,
    # and View.as_view() copies them from a decorated dispatch().
    if hasattr(callback, "login_url") and hasattr(callback, "redirect_field_name"):
        return f"session | token: {token_text}" if token_text else "session"
    if token_text:
        return f"page | token: {token_text}"
    return "page"


def route_table(urlconf=None) -> list[Route]:
    routes = []
    for path, entry, namespace in _walk(get_resolver(urlconf).url_patterns):
        callback = entry.callback
        cls = getattr(callback, "cls", None)
        if isinstance(cls, type) and issubclass(cls, APIView):
            methods = _drf_methods(callback)
            rule = _drf_rule(callback, methods)
        else:
            view_class = getattr(callback, "view_class", None)
            methods = tuple(
                m.upper() for m in getattr(view_class, "http_method_names", ()) if view_class and hasattr(view_class, m) and m.upper() not in _SAFE_EXTRA
            )
            rule = _django_rule(callback, namespace, methods)
        routes.append(Route(path=path, methods=methods, rule=rule, view=_view_name(callback), name=entry.name or "", namespace=namespace, callback=callback))
    return routes


def websocket_routes() -> list[Route]:
    from deerflow_site.routing import websocket_urlpatterns

    routes = []
    for path, entry, _namespace in _walk(websocket_urlpatterns):
        routes.append(Route(path=path, methods=("WS",), rule="session (websocket)", view=_view_name(entry.callback), callback=entry.callback))
    return routes


def path_for(route_path: str, **kwargs) -> str:
    """Fill a route template ("/api/tokens/<int:token_id>/") with values."""

    def fill(match):
        name = match.group(2)
        if name not in kwargs:
            raise KeyError(f"{route_path} needs a value for {name!r}")
        return str(kwargs[name])

    return re.sub(r"<(?:(\w+):)?(\w+)>", fill, route_path)
