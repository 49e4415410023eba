"""Authentication: allauth (browser sign-in), personal access tokens (scripts), CORS.

Everything here is read from the environment so that an operator switches sign-up, e-mail,
OpenID Connect providers and CORS origins without touching code. `docs/accounts.md` is the
operator's guide to these variables.
"""

import json

from django.core.exceptions import ImproperlyConfigured

from deerflow_site.settings.api import REST_FRAMEWORK
from deerflow_site.settings.base import INSTALLED_APPS
from deerflow_site.settings.environment import env
from deerflow_site.settings.security import CSRF_TRUSTED_ORIGINS

# --- who may sign up --------------------------------------------------------------------------
# On a server without a superuser the sign-up page is open and the account it creates becomes
# the superuser (apps.accounts.adapter). Once an admin exists, sign-up stays closed unless this
# is true; admins can always add users in Django admin.
DEERFLOW_ALLOW_SIGNUP = env.bool("DEERFLOW_ALLOW_SIGNUP", default=False)

# --- allauth: accounts ------------------------------------------------------------------------
ACCOUNT_ADAPTER = "apps.accounts.adapter.AccountAdapter"
ACCOUNT_FORMS = {"login": "apps.accounts.forms.LoginForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
# E-mail is required so that password reset can reach the user.
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# "none": the embedded default sends mail to the console, so demanding a verified address would
# lock people out. Operators with a real mail server can set "optional" or "mandatory".
ACCOUNT_EMAIL_VERIFICATION = env.str("ACCOUNT_EMAIL_VERIFICATION", default="none")
if ACCOUNT_EMAIL_VERIFICATION not in {"none", "optional", "mandatory"}:
    raise ImproperlyConfigured("ACCOUNT_EMAIL_VERIFICATION must be none, optional or mandatory")
# None = the sign-in form shows a "Remember me" box; unticked, the session ends with the browser.
ACCOUNT_SESSION_REMEMBER = None
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_PREVENT_ENUMERATION = True
# The sites framework default site is "example.com"; mail subjects name the product instead.
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[DeerFlow] "
# Sign-out is a POST (the form on /accounts/logout/), so a link on another site cannot sign a user out.
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_RATE_LIMITS = {
    # Ten failed sign-ins in a short while lock further attempts: per client IP per minute, and per
    # login name for a quarter of an hour (a slow guesser across IPs still hits the second).
    "login_failed": env.str("DEERFLOW_LOGIN_FAILED_RATE", default="10/m/ip,10/15m/key"),
}
# Behind a reverse proxy the client IP comes from X-Forwarded-For; without this every user would
# share the proxy's IP and its rate limit.
ALLAUTH_TRUSTED_PROXY_COUNT = env.int("DEERFLOW_TRUSTED_PROXY_COUNT", default=0)

# --- e-mail -----------------------------------------------------------------------------------
# The embedded default prints messages (password reset links) to the server console.
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
if env.str("EMAIL_URL", default=""):
    # e.g. smtp+tls://user:password@mail.example.com:587 sets EMAIL_BACKEND, EMAIL_HOST and the rest.
    globals().update(env.email_url("EMAIL_URL"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="DeerFlow <deerflow@localhost>")

# --- allauth: social accounts / OpenID Connect -----------------------------------------------
SOCIALACCOUNT_ADAPTER = "apps.accounts.adapter.SocialAccountAdapter"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # never merge into a local account by e-mail alone
SOCIALACCOUNT_ONLY = env.bool("DEERFLOW_SOCIAL_ONLY", default=False)


def social_providers_from_env(oidc_json: str, providers_json: str) -> dict:
    """Build SOCIALACCOUNT_PROVIDERS from two environment variables.

    ``DEERFLOW_OIDC_PROVIDERS``: a JSON list of OpenID Connect servers, each
    ``{"id", "name", "server_url", "client_id", "secret"}`` (optional ``"scope"``, ``"pkce"``).
    ``DEERFLOW_SOCIALACCOUNT_PROVIDERS``: allauth's own SOCIALACCOUNT_PROVIDERS as JSON, merged
    on top, for other providers (whose apps are named in DEERFLOW_SOCIAL_PROVIDER_APPS).
    """
    providers: dict = {}
    oidc = json.loads(oidc_json) if oidc_json.strip() else []
    if not isinstance(oidc, list):
        raise ImproperlyConfigured("DEERFLOW_OIDC_PROVIDERS must be a JSON list of objects")
    apps = []
    for index, item in enumerate(oidc):
        missing = [key for key in ("id", "name", "server_url", "client_id") if not item.get(key)]
        if missing:
            raise ImproperlyConfigured(f"DEERFLOW_OIDC_PROVIDERS[{index}] is missing {', '.join(missing)}")
        app_settings = {"server_url": item["server_url"]}
        if "pkce" in item:
            app_settings["oauth_pkce_enabled"] = bool(item["pkce"])
        if "scope" in item:
            app_settings["scope"] = item["scope"]
        apps.append(
            {
                "provider_id": item["id"],
                "name": item["name"],
                "client_id": item["client_id"],
                "secret": item.get("secret", ""),
                "settings": app_settings,
            }
        )
    if apps:
        providers["openid_connect"] = {"APPS": apps}
    extra = json.loads(providers_json) if providers_json.strip() else {}
    if not isinstance(extra, dict):
        raise ImproperlyConfigured("DEERFLOW_SOCIALACCOUNT_PROVIDERS must be a JSON object")
    for name, config in extra.items():
        if name == "openid_connect" and "APPS" in providers.get(name, {}):
            config = {**config, "APPS": providers[name]["APPS"] + list(config.get("APPS", []))}
        providers[name] = config
    return providers


SOCIALACCOUNT_PROVIDERS = social_providers_from_env(
    env.str("DEERFLOW_OIDC_PROVIDERS", default=""), env.str("DEERFLOW_SOCIALACCOUNT_PROVIDERS", default="")
)
# Other allauth providers (github, gitlab, google, microsoft...) need their app installed.
INSTALLED_APPS = [
    *INSTALLED_APPS,
    *(f"allauth.socialaccount.providers.{name}" for name in env.list("DEERFLOW_SOCIAL_PROVIDER_APPS", default=[])),
]

# --- the API: bearer tokens first, then the session -------------------------------------------
REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    # Bearer first: its WWW-Authenticate header makes "no credentials" a 401, and a request with a
    # bearer header is decided by the token alone, never by a session cookie it also carries.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.PersonalAccessTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # TokenScopePermission confines token callers to views that declare `token_scopes`.
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "apps.accounts.permissions.TokenScopePermission",
    ],
}
# last_used_at is written at most this often per token, so a busy script does not write per call.
DEERFLOW_TOKEN_TOUCH_SECONDS = 60

# --- DeerFlow's own frontend ------------------------------------------------------------------
# The origins DeerFlow's Next.js frontend is served from (e.g. http://localhost:3000), when it
# signs in here through /api/v1/auth/* (apps/accounts/deerflow_auth.py). Its proxy forwards the
# browser's Origin, which is then not this server's own: each origin listed is trusted for CSRF,
# for the sign-in routes' origin check and, should the browser call this server directly, for
# CORS with cookies.
DEERFLOW_FRONTEND_ORIGINS = env.list("DEERFLOW_FRONTEND_ORIGINS", default=[])
for _origin in DEERFLOW_FRONTEND_ORIGINS:
    if not _origin.startswith(("http://", "https://")) or _origin.rstrip("/").count("/") != 2:
        raise ImproperlyConfigured(f"DEERFLOW_FRONTEND_ORIGINS: {_origin!r} is not an origin like https://deerflow.example.com")
DEERFLOW_FRONTEND_ORIGINS = [origin.rstrip("/") for origin in DEERFLOW_FRONTEND_ORIGINS]

CSRF_TRUSTED_ORIGINS = [*CSRF_TRUSTED_ORIGINS, *(o for o in DEERFLOW_FRONTEND_ORIGINS if o not in CSRF_TRUSTED_ORIGINS)]

# --- CORS -------------------------------------------------------------------------------------
# Closed unless origins are listed. Cross-origin callers use bearer tokens (no cookies), and the
# SDK needs Content-Location to learn the run id of a stream it started. DeerFlow's frontend's
# origins are allowed too, with cookies (it signs in with them).
CORS_ALLOWED_ORIGINS = [*env.list("CORS_ALLOWED_ORIGINS", default=[]), *DEERFLOW_FRONTEND_ORIGINS]
CORS_URLS_REGEX = r"^/api/.*$"
CORS_EXPOSE_HEADERS = ["Content-Location", "X-Request-ID", "X-Trace-Id"]
CORS_ALLOW_CREDENTIALS = env.bool("CORS_ALLOW_CREDENTIALS", default=bool(DEERFLOW_FRONTEND_ORIGINS))
CORS_ALLOW_HEADERS = [
    "accept",
    "authorization",
    "content-type",
    "user-agent",
    "x-csrftoken",
    "x-csrf-token",  # DeerFlow's frontend's name for it
    "x-requested-with",
    # Stream resume and the SDK's stream requests.
    "last-event-id",
    "cache-control",
    # Request correlation (deerflow_site/request_id.py).
    "x-request-id",
    "traceparent",
]
