"""Bearer tokens on plain (non-DRF) Django views.

Django's own views (pages, admin, allauth) know only the session. A request that presents a
bearer token to such a view is refused with 403 rather than served as whoever the session
cookie says, so a token never "works" somewhere by accident. A plain view may opt in with
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


def is_drf_view(view_func) -> bool:
    cls = getattr(view_func, "cls", None)
    return isinstance(cls, type) and issubclass(cls, APIView)


class BearerTokenMiddleware(MiddlewareMixin):
    def process_view(self, request, view_func, view_args, view_kwargs):
        raw = bearer_credential(request)
        if raw is None or is_drf_view(view_func):
            return None
        token_scopes = view_token_scopes(view_func)
        if not token_scopes:
            return JsonResponse({"detail": TOKEN_NOT_ALLOWED}, status=403)
        try:
            user, token = authenticate_bearer(raw)
        except TokenRejected as rejected:
            response = JsonResponse({"detail": str(rejected)}, status=401)
            response["WWW-Authenticate"] = WWW_AUTHENTICATE
            return response
        try:
            check_token_scope(token=token, token_scopes=token_scopes, method=request.method)
        except TokenRefused as refused:
            return JsonResponse({"detail": str(refused)}, status=403)
        request.user = user
        request.auth = token
        request._dont_enforce_csrf_checks = True
        return None
