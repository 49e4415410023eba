"""Apps, middleware, templates, static files, i18n."""

from deerflow_site.settings.environment import BASE_DIR, DEBUG, DEER_FLOW_HOME, LOCAL_DEV, env  # noqa: F401

INSTALLED_APPS = [
    # The server's own app, first so that its runserver (Daphne's) wins. Not "daphne" itself: its
    # app imports daphne.server, which makes Twisted's reactor and its loop during Django's setup,
    # and the web launcher sets Django up before it forks the servers (deerflow_site/server/web_processes.py).
    "deerflow_site.server",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # allauth's socialaccount keeps provider apps per site, so the sites framework is on (SITE_ID).
    "django.contrib.sites",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_celery_beat",
    "corsheaders",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    # Generic OpenID Connect: any OIDC server is configured from the environment (settings/auth.py).
    "allauth.socialaccount.providers.openid_connect",
    "apps.accounts",
    "apps.threads",
    "apps.runs",
    "apps.chat",
    "apps.schedules",
    "apps.agents",
    "apps.skills",
    "apps.memory",
    "apps.knowledge",
    "apps.mcp",
    # IM channels; its app label stays "integrations" (apps/channels/apps.py says why).
    "apps.channels",
    "apps.console",
    "apps.governance",
    "apps.observability",
    "apps.workspace",
    "apps.shares",
]

MIDDLEWARE = [
    # First, so every response (a redirect or a refusal too) carries the request's id.
    "deerflow_site.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before CommonMiddleware so that preflight answers carry the CORS headers.
    "corsheaders.middleware.CorsMiddleware",
    # DeerFlow's frontend's cookie and header names (access_token, csrf_token, X-CSRF-Token) as
    # mirrors of Django's session and CSRF ones (apps/accounts/deerflow_cookies.py). Before
    # SessionMiddleware, so the session is read through them and its cookie is mirrored after.
    "apps.accounts.deerflow_cookies.DeerFlowFrontendCookiesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Bearer tokens on plain Django views: refused unless the view opts in (apps/accounts/middleware.py).
    # Its process_view must run before CSRF's; it needs no earlier position for anything else.
    "apps.accounts.middleware.BearerTokenMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "deerflow_site.urls"
ASGI_APPLICATION = "deerflow_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context_processors.accounts",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DEER_FLOW_HOME / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the source folders: `make run` needs no collectstatic step, and the
# files are few. Operators who collectstatic can turn this off.
WHITENOISE_USE_FINDERS = env.bool("WHITENOISE_USE_FINDERS", default=True)
WHITENOISE_AUTOREFRESH = LOCAL_DEV

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
AUTH_USER_MODEL = "accounts.User"
SITE_ID = 1
AUTHENTICATION_BACKENDS = [
    # Django's backend keeps `createsuperuser` users and admin tooling working; allauth's adds
    # login by email, rate limits and social accounts.
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
