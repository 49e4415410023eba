"""Scopes: which routes a personal access token may call.

A DRF view opts in to token callers with a class attribute mapping HTTP methods to the scope
they need, e.g. ``token_scopes = {"GET": "threads:read", "POST": "threads:write"}``; ``None`` as
the scope means "any valid token". Views without it (or without the method) refuse tokens.
Session callers are never affected by ``token_scopes``.

Where one of a route's parameters does more than the route's scope covers (``?action=`` on a
run's stream cancels the run, on top of reading it), the view asks ``require_token_scope`` for
the extra scope.

Staff: a staff member's token acts with staff powers only when it holds the ``admin`` scope, and
the scope never makes anyone staff. Staff-only DRF views use ``STAFF_ONLY`` as their permission
classes and declare ``"admin"`` in ``token_scopes`` (or nothing: session only); a view where only
some parameters need staff (everyone's numbers rather than the caller's) asks ``require_staff``.
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import BasePermission, IsAdminUser

from apps.accounts.models import PersonalAccessToken

TOKEN_NOT_ALLOWED = "personal access tokens cannot be used on this route"
ANY_SCOPE = None
ADMIN_SCOPE = PersonalAccessToken.Scope.ADMIN.value
_MISSING = object()


class TokenRefused(Exception):
    """A valid token that this route does not accept; the message names why (answered as 403)."""


def view_token_scopes(view) -> dict | None:
    """The ``token_scopes`` declared by a DRF view class/instance, a class-based Django view or a
    function view (set as an attribute by ``accepts_tokens``)."""
    for candidate in (view, getattr(view, "cls", None), getattr(view, "view_class", None)):
        scopes = getattr(candidate, "token_scopes", None)
        if scopes is not None:
            return scopes
    return None


def required_scope(token_scopes: dict | None, method: str) -> tuple[bool, str | None]:
    """(admitted, scope): whether tokens may call ``method`` at all, and the scope it needs
    (None = any valid token)."""
    method = method.upper()
    required = (token_scopes or {}).get(method, _MISSING)
    if required is _MISSING and method == "HEAD":
        # HEAD is a GET without a body: it needs what GET needs.
        required = (token_scopes or {}).get("GET", _MISSING)
    if required is _MISSING:
        return False, None
    return True, required


def check_token_scope(*, token: PersonalAccessToken, token_scopes: dict | None, method: str) -> None:
    """Raise TokenRefused unless this token may call ``method`` on a view declaring ``token_scopes``."""
    admitted, required = required_scope(token_scopes, method)
    if not admitted:
        raise TokenRefused(TOKEN_NOT_ALLOWED)
    if required is not ANY_SCOPE and required not in (token.scopes or []):
        raise TokenRefused(lacks_scope_message(required))


def lacks_scope_message(scope: str) -> str:
    return f"this token lacks the '{scope}' scope"


def token_lacks_scope(request, scope: str) -> bool:
    """Whether this is a token caller whose token does not hold ``scope`` (sessions never lack one)."""
    token = getattr(request, "auth", None)
    return isinstance(token, PersonalAccessToken) and scope not in (token.scopes or [])


def require_token_scope(request, scope: str) -> None:
    """403 for a token caller without ``scope``: for a parameter that asks more of a route than
    its declared scope (a read that would also cancel). Sessions pass."""
    if token_lacks_scope(request, scope):
        raise exceptions.PermissionDenied(lacks_scope_message(scope))


def require_staff(request, detail: str) -> None:
    """403 unless the caller may act as staff here: ``detail`` for someone who is not staff; a
    staff member's token without ``admin`` is told the scope it lacks."""
    if not getattr(request.user, "is_staff", False):
        raise exceptions.PermissionDenied(detail)
    require_token_scope(request, ADMIN_SCOPE)


def accepts_tokens(token_scopes: dict):
    """Decorator for a plain (non-DRF) Django view, e.g. an async SSE view, with the same meaning
    as the DRF class attribute. apps.accounts.middleware then authenticates the bearer for it."""

    def decorate(view_func):
        view_func.token_scopes = dict(token_scopes)
        return view_func

    return decorate


def _implements(view, method: str) -> bool:
    name = method.lower()
    return name in getattr(view, "http_method_names", ()) and hasattr(view, name)


class TokenScopePermission(BasePermission):
    """In DRF's default permission classes beside IsAuthenticated: confines token callers."""

    def has_permission(self, request, view) -> bool:
        if not isinstance(request.auth, PersonalAccessToken):
            return True
        if not _implements(view, request.method):
            return True  # the view answers 405 for a method it has no handler for
        try:
            check_token_scope(token=request.auth, token_scopes=view_token_scopes(view), method=request.method)
        except TokenRefused as refused:
            raise exceptions.PermissionDenied(str(refused)) from None
        return True


class IsStaff(IsAdminUser):
    """Staff only. With TokenScopePermission (``STAFF_ONLY``) a token also needs the scope its
    view declares, ``admin``; a view that declares none is for a staff session only."""

    message = "this is for staff only"


STAFF_ONLY = [IsStaff, TokenScopePermission]
