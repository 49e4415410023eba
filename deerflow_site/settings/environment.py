"""The one place settings read the environment (django-environ)."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]


class _Env(environ.Env):
    """django-environ, with a malformed value reported as one line naming the variable
    (ImproperlyConfigured, which manage.py and the ASGI entry point print) instead of a
    ValueError traceback from deep inside settings."""

    def get_value(self, var, *args, **kwargs):
        try:
            return super().get_value(var, *args, **kwargs)
        except ValueError as exc:
            raise ImproperlyConfigured(f"environment variable {var} is not valid: {exc}") from None


env = _Env()

DEER_FLOW_HOME = Path(env.str("DEER_FLOW_HOME", default=str(BASE_DIR / ".deer-flow"))).expanduser().resolve()

# `make run` keeps the local server's secret key in its data home. A home holding that file is
# a local install, so every command started against it (manage.py, celery, daphne) gets the
# defaults `make run` uses: DJANGO_DEBUG on and that key. Anywhere else DJANGO_DEBUG stays off
# and a missing secret key stops startup, as production needs.
LOCAL_SECRET_KEY_FILE = DEER_FLOW_HOME / "secret_key"
LOCAL_HOME = LOCAL_SECRET_KEY_FILE.is_file()

# DJANGO_DEBUG: a local development server (`make run`): an insecure default secret key, local
# hosts, no secure-cookie rules. It never shows Django's debug pages to the product's users;
# those (tracebacks, the URL list on a 404) are DEERFLOW_DEBUG_PAGES, for developers, and only
# together with DJANGO_DEBUG. DEBUG is Django's setting: the pages.
LOCAL_DEV = env.bool("DJANGO_DEBUG", default=LOCAL_HOME)
DEBUG = LOCAL_DEV and env.bool("DEERFLOW_DEBUG_PAGES", default=False)


def local_secret_key() -> str:
    """The key `make run` made for this home, or "" when there is none."""
    if not LOCAL_HOME:
        return ""
    try:
        return LOCAL_SECRET_KEY_FILE.read_text().strip()
    except OSError:
        return ""
