"""Secret key, hosts and cookies: strict unless DJANGO_DEBUG is on."""

from django.core.exceptions import ImproperlyConfigured

from deerflow_site.settings.environment import LOCAL_DEV, env, local_secret_key

if LOCAL_DEV:
    SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="") or local_secret_key() or "django-insecure-local-development-only"
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
else:
    SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
    if not SECRET_KEY:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off. Set it to a long random value, "
            "or start the local server once with `make run` (its data home then supplies the local defaults)."
        )
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[])
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS is required when DJANGO_DEBUG is off (comma-separated host names).")
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)

CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
