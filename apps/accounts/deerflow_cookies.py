"""DeerFlow's frontend's cookie and header names, mapped onto Django's session and CSRF.

DeerFlow's Next.js frontend knows its gateway's names, not Django's:

- its server side decides "signed in or not" by the presence of an ``access_token`` cookie and
  forwards only that cookie to ``/api/v1/auth/me`` (``frontend/src/core/auth/server.ts``), so the
  session has to be reachable under that name alone;
- its browser side echoes the readable ``csrf_token`` cookie as ``X-CSRF-Token`` on every write,
  where Django reads ``X-CSRFToken`` and the ``csrftoken`` cookie.

There is still one session and one CSRF secret. ``access_token`` carries the Django session key
(HttpOnly, with the session cookie's own flags) and ``csrf_token`` carries the CSRF cookie's value;
both are *mirrors*, written whenever Django writes (or deletes) the cookie they mirror, for a
browser that signed in through ``/api/v1/auth/*`` or already holds one of them. The bundled UI's
browsers never see them. Incoming, each mirror stands in for the cookie it mirrors only when that
one is absent, and ``X-CSRF-Token`` is copied into the header Django checks only when Django's own
is absent: CSRF is checked exactly as before, by CsrfViewMiddleware (or DRF's session check).

Listed before SessionMiddleware: its request side must run before the session is read, and its
response side after the session and CSRF middleware have set their cookies.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin

ACCESS_TOKEN_COOKIE = "access_token"
CSRF_TOKEN_COOKIE = "csrf_token"
CSRF_TOKEN_HEADER = "HTTP_X_CSRF_TOKEN"  # X-CSRF-Token
_ISSUE_ATTR = "_deerflow_frontend_cookies"
_MORSEL_FLAGS = ("expires", "max-age", "path", "domain", "secure", "samesite")


_SESSION_MARK = "deerflow_frontend"


def mark_frontend_session(request) -> None:
    """Remember in the session that this browser came from DeerFlow's frontend: a sign-in that
    finishes elsewhere (single sign-on's callback under /accounts/) then gets the mirrors too."""
    request.session[_SESSION_MARK] = True


def issue_frontend_cookies(request) -> None:
    """Ask for the mirrors on this response (the sign-in routes call it: the browser has none yet)."""
    setattr(getattr(request, "_request", request), _ISSUE_ATTR, True)


def _copy(response, source_name: str, target_name: str, *, httponly: bool) -> None:
    source = response.cookies[source_name]
    response.cookies[target_name] = source.value
    target = response.cookies[target_name]
    for flag in _MORSEL_FLAGS:
        target[flag] = source[flag]
    target["httponly"] = httponly


class DeerFlowFrontendCookiesMiddleware(MiddlewareMixin):
    def process_request(self, request):
        cookies = request.COOKIES
        request._deerflow_had = {name: cookies.get(name) for name in (ACCESS_TOKEN_COOKIE, CSRF_TOKEN_COOKIE)}
        if cookies.get(ACCESS_TOKEN_COOKIE) and not cookies.get(settings.SESSION_COOKIE_NAME):
            cookies[settings.SESSION_COOKIE_NAME] = cookies[ACCESS_TOKEN_COOKIE]
        if cookies.get(CSRF_TOKEN_COOKIE) and not cookies.get(settings.CSRF_COOKIE_NAME):
            cookies[settings.CSRF_COOKIE_NAME] = cookies[CSRF_TOKEN_COOKIE]
        header = request.META.get(CSRF_TOKEN_HEADER)
        if header and not request.META.get(settings.CSRF_HEADER_NAME):
            request.META[settings.CSRF_HEADER_NAME] = header

    @staticmethod
    def _marked(request, response) -> bool:
        # Only when the session cookie is being written: the session is loaded by then anyway.
        session = getattr(request, "session", None)
        return settings.SESSION_COOKIE_NAME in response.cookies and session is not None and bool(session.get(_SESSION_MARK))

    def process_response(self, request, response):
        had = getattr(request, "_deerflow_had", None)
        if had is None:
            return response
        if not (getattr(request, _ISSUE_ATTR, False) or any(had.values()) or self._marked(request, response)):
            return response
        if settings.SESSION_COOKIE_NAME in response.cookies and ACCESS_TOKEN_COOKIE not in response.cookies:
            _copy(response, settings.SESSION_COOKIE_NAME, ACCESS_TOKEN_COOKIE, httponly=True)
        if CSRF_TOKEN_COOKIE not in response.cookies:
            if settings.CSRF_COOKIE_NAME in response.cookies:
                _copy(response, settings.CSRF_COOKIE_NAME, CSRF_TOKEN_COOKIE, httponly=False)
            else:
                # The browser holds Django's CSRF cookie but not the readable mirror yet.
                secret = request.META.get("CSRF_COOKIE")
                if secret and secret != had[CSRF_TOKEN_COOKIE] and not settings.CSRF_USE_SESSIONS:
                    response.set_cookie(CSRF_TOKEN_COOKIE, secret, max_age=settings.CSRF_COOKIE_AGE,
                                        domain=settings.CSRF_COOKIE_DOMAIN, path=settings.CSRF_COOKIE_PATH,
                                        secure=settings.CSRF_COOKIE_SECURE, httponly=False,
                                        samesite=settings.CSRF_COOKIE_SAMESITE)
        return response
