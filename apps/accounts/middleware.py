"""Bearer tokens on plain (non-DRF) Django views.

Django's own views (pages, admin, allauth) know only the session. A request that presents a
valid bearer token to such a view is refused with 403, and any other ``Authorization`` header
(a bad token, another scheme) with 401, rather than served as whoever the session cookie says,
so a token never "works" somewhere by accident. A plain view may opt in with
``apps.accounts.permissions.accepts_tokens`` (e.g. an async streaming view): then the token is
authenticated here, scopes are checked, and the request runs as the token's owner without CSRF
(no cookie is involved). DRF views are left to DRF's authentication classes.

Listed before CsrfViewMiddleware so the CSRF exemption for authenticated bearer calls is in place
before CSRF is checked; AuthenticationMiddleware's process_request has already run by then.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.utils.deprecation import MiddlewareMixin
from rest_framework.views import APIView

from apps.accounts.authentication import WWW_AUTHENTICATE, authenticate_bearer, bearer_credential
from apps.accounts.permissions import TOKEN_NOT_ALLOWED, TokenRefused, check_token_scope, view_token_scopes
from apps.accounts.selectors import TokenRejected


def _unauthorized(detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=401)
    response["WWW-Authenticate"] = WWW_AUTHENTICATE
    return response


def is_drf_view(view_func) -> bool:
    cls = getattr(view_func, "cls", None)
    return isinstance(cls, type) and issubclass(cls, APIView)


class BearerTokenMiddleware(MiddlewareMixin):
    def process_view(self, request, view_func, view_args, view_kwargs):
        raw = bearer_credential(request)
        if raw is None or is_drf_view(view_func):
            return None
        # Any Authorization header that is not a valid token is a 401, here as on the API.
        try:
            user, token = authenticate_bearer(raw)
        except TokenRejected as rejected:
            return _unauthorized(str(rejected))
        token_scopes = view_token_scopes(view_func)
        if not token_scopes:
            return JsonResponse({"detail": TOKEN_NOT_ALLOWED}, status=403)
        try:
            check_token_scope(token=token, token_scopes=token_scopes, method=request.method)
        except TokenRefused as refused:
            return JsonResponse({"detail": str(refused)}, status=403)
        request.user = user
        request.auth = token
        request._dont_enforce_csrf_checks = True
        return None
