"""DRF authentication by personal access token: ``Authorization: Bearer dfp_…``.

A request that carries an ``Authorization`` header is decided by that header alone: anything but
a valid bearer token (a bad token, ``Basic …``, ``Token dfp_…``, a bare ``dfp_…``) is a 401,
never a fall-back to the session cookie the same request may carry — a script that believes it
runs with a limited token must not get the session's full rights. Requests without the header
are left to the next class (SessionAuthentication, which enforces CSRF on unsafe methods).
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

WWW_AUTHENTICATE = 'Bearer realm="api"'
MALFORMED = "the Authorization header is not a bearer token: use 'Authorization: Bearer dfp_…', or send no Authorization header"


def bearer_credential(request) -> str | None:
    """The token presented in an ``Authorization: Bearer`` header; "" when there is an
    ``Authorization`` header that is not one (another scheme, or broken); None when there is no
    such header at all. Works on Django and DRF requests."""
    if "HTTP_AUTHORIZATION" not in getattr(request, "META", {}):
        return None
    header = get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"bearer":
        return ""
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError:
        return ""


def authenticate_bearer(raw: str):
    """(owner, token) for a presented token, recording its use; raises selectors.TokenRejected."""
    # Imported here: DRF imports this module while rest_framework.views is still initialising
    # (DEFAULT_AUTHENTICATION_CLASSES), and the services reach deerflow_site.errors, which needs it.
    from apps.accounts import selectors, services

    if not raw:
        raise selectors.TokenRejected(MALFORMED)
    token = selectors.token_authenticate(raw=raw)
    services.token_touch(token=token)
    return token.owner, token


class PersonalAccessTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        raw = bearer_credential(request)
        if raw is None:
            return None
        from apps.accounts.selectors import TokenRejected

        try:
            return authenticate_bearer(raw)
        except TokenRejected as rejected:
            raise exceptions.AuthenticationFailed(str(rejected)) from None

    def authenticate_header(self, request) -> str:
        # Being first in DEFAULT_AUTHENTICATION_CLASSES, this makes DRF answer 401 (not 403)
        # to unauthenticated callers, with this challenge.
        return WWW_AUTHENTICATE


class PersonalAccessTokenScheme(OpenApiAuthenticationExtension):
    """Shows the bearer scheme in /api/schema/ so the interactive docs can send a token."""

    target_class = "apps.accounts.authentication.PersonalAccessTokenAuthentication"
    name = "personalAccessToken"

    def get_security_requirement(self, auto_schema):
        # Only where the view's token_scopes admit this method, with the scope it needs, so the
        # schema tells script authors the truth (session-only routes list only the cookie).
        from apps.accounts.permissions import required_scope, view_token_scopes

        admitted, required = required_scope(view_token_scopes(auto_schema.view), auto_schema.method)
        if not admitted:
            return None
        return {self.name: [] if required is None else [required]}

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "dfp_…", "description": "A DeerFlow personal access token."}
