"""DeerFlow's sign-in API, ``/api/v1/auth/*``, served from our accounts.

DeerFlow's Next.js frontend signs in only through these routes (its gateway's
``app/gateway/routers/auth.py``): ``setup-status``, ``providers``, ``login/local``, ``register``,
``initialize``, ``me``, ``change-password`` and ``logout``. They are thin: the same users, the same
allauth forms and flows as ``/accounts/`` (so its rate limits, password validators, the sign-up
switch and the first-admin rule all apply), and a Django session. The session is carried under
the cookie names the frontend looks for (``access_token``, ``csrf_token``) by
``apps.accounts.deerflow_cookies``.

Shapes follow DeerFlow's gateway, because the frontend reads them: errors the frontend tells apart
are ``{"detail": {"code": ..., "message": ...}}`` (its ``AuthErrorCode`` values), bad input is a
422 whose ``detail`` is a list of ``{"loc", "msg", "type": "value_error"}``.

CSRF: ``change-password`` is checked like any session write (X-CSRF-Token or X-CSRFToken against
the CSRF cookie). ``login/local``, ``register``, ``initialize`` and ``logout`` are called before
the browser has a token (DeerFlow's frontend sends none), so instead of the token they refuse a
browser ``Origin`` that is neither this server's nor a trusted one (CSRF_TRUSTED_ORIGINS, which
DEERFLOW_FRONTEND_ORIGINS joins): a page elsewhere cannot sign a visitor in or out.

Tokens: none of these routes takes a personal access token (they declare no ``token_scopes``).
"""

from __future__ import annotations

from allauth import app_settings as allauth_settings
from allauth.account import app_settings as account_settings
from allauth.account.adapter import get_adapter
from allauth.account.forms import ChangePasswordForm, LoginForm, SignupForm
from allauth.account.internal.flows.password_change import finalize_password_change
from allauth.account.internal.flows.signup import complete_signup
from allauth.utils import get_form_class
from allauth.core import ratelimit
from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from django.conf import settings
from django.http import HttpResponseRedirect
from django.middleware.csrf import get_token
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts import api_types as types
from apps.accounts import selectors
from apps.accounts.authentication import PersonalAccessTokenAuthentication
from apps.accounts.deerflow_cookies import ACCESS_TOKEN_COOKIE, CSRF_TOKEN_COOKIE, issue_frontend_cookies, mark_frontend_session
from apps.accounts.permissions import TokenScopePermission
from apps.errors import AlreadyInitialized

CROSS_SITE_DENIED = "Cross-site auth request denied."
TOO_MANY_ATTEMPTS = "Too many login attempts. Try again later."


def _auth_error(http_status: int, code: str, message: str) -> Response:
    return Response({"detail": {"code": code, "message": message}}, status=http_status)


def _invalid(errors: list[tuple[str, str]]) -> Response:
    return Response({"detail": [{"loc": ["body", field], "msg": msg, "type": "value_error"} for field, msg in errors]},
                    status=status.HTTP_422_UNPROCESSABLE_ENTITY)


def _form_errors(form, rename: dict[str, str]) -> list[tuple[str, str]]:
    return [(rename.get(field, field), str(message)) for field, messages in form.errors.items() for message in messages]


def _error_codes(form, field: str | None = None) -> set[str]:
    data = form.errors.as_data()
    fields = [field] if field else list(data)
    return {error.code for name in fields for error in data.get(name, [])}


def _as_bool(value, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in {"0", "false", "no", "off"}


def _rate_limited(request, action: str) -> Response | None:
    """allauth's per-action limits (ACCOUNT_RATE_LIMITS), as on the /accounts/ pages: its login,
    signup and change-password views count every POST under the same actions."""
    if ratelimit.consume(request, action=action):
        return None
    return Response({"detail": TOO_MANY_ATTEMPTS if action == "login" else "Too many requests. Try again later."},
                    status=status.HTTP_429_TOO_MANY_REQUESTS)


def _remember(request, remember: bool) -> None:
    request.session.set_expiry(None if remember else 0)


def _display_email(user) -> str:
    """The frontend's schema insists on an address; an account without one (say, made by
    ``createsuperuser``) shows as ``<username>@users.invalid`` (a reserved, unroutable name)."""
    if user.email:
        return user.email
    local = "".join(c if c.isalnum() or c in "._+-" else "-" for c in user.get_username()).strip(".") or f"user-{user.pk}"
    return f"{local}@users.invalid"


def user_payload(user) -> dict:
    """DeerFlow's ``UserResponse``: ``system_role`` is ``admin`` for staff accounts."""
    social = user.socialaccount_set.order_by("pk").values_list("provider", flat=True).first()
    return {
        "id": str(user.pk),
        "email": _display_email(user),
        "system_role": "admin" if user.is_staff else "user",
        "needs_setup": False,
        "oauth_provider": social,
    }


def origin_allowed(request) -> bool:
    """No Origin (curl, a server-side caller), this server's own, or a trusted one."""
    origin = request.META.get("HTTP_ORIGIN")
    if not origin:
        return True
    own = f"{'https' if request.is_secure() else 'http'}://{request.get_host()}"
    return origin == own or origin in settings.CSRF_TRUSTED_ORIGINS


class _SignInView(APIView):
    """The routes a browser calls before it has a CSRF token. A bearer token is authenticated only
    to be refused (TokenScopePermission: no ``token_scopes``); the session is Django's own
    (``request._request``), never DRF's session check, which would demand the token."""

    authentication_classes = [PersonalAccessTokenAuthentication]
    permission_classes = [AllowAny, TokenScopePermission]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD", "OPTIONS") and not origin_allowed(request._request):
            raise exceptions.PermissionDenied(CROSS_SITE_DENIED)


class SetupStatusView(_SignInView):
    @extend_schema(summary="DeerFlow frontend: whether the first admin is still to be created", responses=types.SetupStatus)
    def get(self, request):
        return Response({"needs_setup": not selectors.superuser_exists(), "registration_enabled": _local_signup_open()})


class ProvidersView(_SignInView):
    @extend_schema(summary="DeerFlow frontend: the single sign-on providers offered", responses=types.SsoProviders)
    def get(self, request):
        return Response({"providers": [
            {"id": provider.sub_id, "display_name": provider.name, "type": "oidc" if provider.id == "openid_connect" else provider.id}
            for provider in _providers(request._request)
        ]})


def _providers(request) -> list:
    return get_social_adapter(request).list_providers(request)


class OAuthStartView(_SignInView):
    """Where the frontend's provider buttons go: on to allauth's sign-in for that provider, which
    comes back to ``next`` (a path on this site) signed in."""

    @extend_schema(summary="DeerFlow frontend: start single sign-on with a provider", responses={302: None})
    def get(self, request, provider: str):
        found = next((p for p in _providers(request._request) if p.sub_id == provider), None)
        if found is None:
            return Response({"detail": f"Unknown SSO provider: {provider}"}, status=status.HTTP_400_BAD_REQUEST)
        target = request.query_params.get("next") or "/"
        if not target.startswith("/") or target.startswith("//") or "\\" in target:
            target = "/"
        mark_frontend_session(request._request)
        return HttpResponseRedirect(found.get_login_url(request._request, process="login", next=target))


def _local_signup_open() -> bool:
    return selectors.signup_is_open() and not allauth_settings.SOCIALACCOUNT_ONLY


class LoginLocalView(_SignInView):
    # DeerFlow's frontend posts a form (username = the e-mail address, password, remember_me).
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    @extend_schema(summary="DeerFlow frontend: sign in with e-mail and password",
                   request={"application/x-www-form-urlencoded": types.LoginForm, "multipart/form-data": types.LoginForm,
                            "application/json": types.LoginForm},
                   responses={200: types.SignedIn, **types.AUTH_ERRORS})
    def post(self, request):
        username = str(request.data.get("username") or "").strip()
        password = str(request.data.get("password") or "")
        missing = [(field, "Field required") for field, value in (("username", username), ("password", password)) if not value]
        if missing:
            return _invalid(missing)
        if allauth_settings.SOCIALACCOUNT_ONLY:
            return _auth_error(403, "invalid_credentials", "Sign-in with a password is disabled; use single sign-on")
        django_request = request._request
        if limited := _rate_limited(django_request, "login"):
            return limited
        form_class = get_form_class(account_settings.FORMS, "login", LoginForm)
        remember = _as_bool(request.data.get("remember_me"), True)
        form = form_class(data={"login": username, "password": password, "remember": remember}, request=django_request)
        if not form.is_valid():
            # allauth's own limits (ACCOUNT_RATE_LIMITS["login_failed"]) were counted by the form.
            if "too_many_login_attempts" in _error_codes(form):
                return Response({"detail": TOO_MANY_ATTEMPTS}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            return _auth_error(401, "invalid_credentials", "Incorrect email or password")
        issue_frontend_cookies(request)
        form.login(django_request)
        if not django_request.user.is_authenticated:
            # allauth stopped short of signing in (a mandatory e-mail verification, say).
            return _auth_error(403, "invalid_credentials", "Finish signing in at /accounts/login/ (e-mail verification)")
        return Response({"expires_in": django_request.session.get_expiry_age(), "needs_setup": False})


def _create_account(request, *, first_admin_only: bool):
    body = request.data if isinstance(request.data, dict) else {}
    email = str(body.get("email") or "").strip()
    password = body.get("password")
    missing = [(field, "Field required") for field, value in (("email", email), ("password", password)) if not value]
    if missing:
        return _invalid(missing)
    if not isinstance(password, str):
        return _invalid([("password", "Input should be a valid string")])
    django_request = request._request
    if limited := _rate_limited(django_request, "signup"):
        return limited
    adapter = get_adapter(django_request)
    username = adapter.generate_unique_username([email.split("@")[0], "user"])
    form_class = get_form_class(account_settings.FORMS, "signup", SignupForm)
    form = form_class(data={"username": username, "email": email, "password1": password, "password2": password})
    form.first_admin_only = first_admin_only  # read by AccountAdapter.save_user
    if not form.is_valid():
        if "email_taken" in _error_codes(form, "email"):
            return _auth_error(400, "email_already_exists", "Email already registered")
        return _invalid(_form_errors(form, {"password1": "password", "password2": "password"}))
    try:
        user, _ = form.try_save(django_request)
    except AlreadyInitialized:
        return _auth_error(409, "system_already_initialized", "System already initialized")
    if user is None:
        # allauth's enumeration prevention: the address has an account, whose owner was mailed.
        return _auth_error(400, "email_already_exists", "Email already registered")
    issue_frontend_cookies(request)
    complete_signup(django_request, user=user)
    if django_request.user.is_authenticated:
        _remember(django_request, _as_bool(body.get("remember_me"), True))
    return Response(user_payload(user), status=status.HTTP_201_CREATED)


class RegisterView(_SignInView):
    @extend_schema(summary="DeerFlow frontend: sign up (while sign-up is open)", request=types.SignUp,
                   responses={201: types.DeerFlowUser, **types.AUTH_ERRORS})
    def post(self, request):
        if not _local_signup_open():
            return _auth_error(403, "registration_disabled", "Self-registration is disabled on this deployment")
        return _create_account(request, first_admin_only=False)


class InitializeView(_SignInView):
    @extend_schema(summary="DeerFlow frontend: create the first admin (only while there is none)", request=types.SignUp,
                   responses={201: types.DeerFlowUser, **types.AUTH_ERRORS})
    def post(self, request):
        if selectors.superuser_exists():
            return _auth_error(409, "system_already_initialized", "System already initialized")
        if allauth_settings.SOCIALACCOUNT_ONLY:
            return _auth_error(403, "registration_disabled", "Accounts are made by single sign-on on this deployment")
        return _create_account(request, first_admin_only=True)


class LogoutView(_SignInView):
    @extend_schema(summary="DeerFlow frontend: sign out", request=None, responses={200: types.Message, **types.AUTH_ERRORS})
    def post(self, request):
        django_request = request._request
        get_adapter(django_request).logout(django_request)
        response = Response({"message": "Successfully logged out"})
        response.delete_cookie(ACCESS_TOKEN_COOKIE, path=settings.SESSION_COOKIE_PATH, domain=settings.SESSION_COOKIE_DOMAIN,
                               samesite=settings.SESSION_COOKIE_SAMESITE)
        response.delete_cookie(CSRF_TOKEN_COOKIE, path=settings.CSRF_COOKIE_PATH, domain=settings.CSRF_COOKIE_DOMAIN,
                               samesite=settings.CSRF_COOKIE_SAMESITE)
        return response


class MeView(APIView):
    """Session only (DeerFlow's frontend sends its cookie; scripts have ``/api/me``)."""

    @extend_schema(summary="DeerFlow frontend: the signed-in user", responses={200: types.DeerFlowUser, **types.AUTH_ERRORS})
    def get(self, request):
        get_token(request._request)  # a browser without the readable CSRF cookie gets it here
        return Response(user_payload(request.user))


class ChangePasswordView(APIView):
    """A session write like any other: DRF's session check demands the CSRF token."""

    @extend_schema(summary="DeerFlow frontend: change your password", request=types.PasswordChange,
                   responses={200: types.Message, **types.AUTH_ERRORS})
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        current, new = body.get("current_password"), body.get("new_password")
        missing = [(field, "Field required") for field, value in (("current_password", current), ("new_password", new)) if not value]
        if missing:
            return _invalid(missing)
        user = request.user
        new_email = str(body.get("new_email") or "").strip()
        if new_email and new_email.lower() != (user.email or "").lower():
            return _invalid([("new_email", "Change your e-mail address at /accounts/email/")])
        if not user.has_usable_password():
            return _auth_error(400, "invalid_credentials", "OAuth users cannot change password")
        django_request = request._request
        if limited := _rate_limited(django_request, "change_password"):
            return limited
        form_class = get_form_class(account_settings.FORMS, "change_password", ChangePasswordForm)
        form = form_class(data={"oldpassword": current, "password1": new, "password2": new}, user=user)
        if not form.is_valid():
            if "oldpassword" in form.errors:
                return _auth_error(400, "invalid_credentials", "Current password is incorrect")
            return _invalid(_form_errors(form, {"password1": "new_password", "password2": "new_password"}))
        form.save()
        issue_frontend_cookies(request)
        finalize_password_change(django_request, user)  # keeps this session, with a new key
        if body.get("remember_me") is not None:
            _remember(django_request, _as_bool(body.get("remember_me"), True))
        return Response({"message": "Password changed successfully"})
