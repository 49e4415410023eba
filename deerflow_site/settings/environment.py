"""The one place settings read the environment (django-environ)."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parents[2]

env = environ.Env()

DEER_FLOW_HOME = Path(env.str("DEER_FLOW_HOME", default=str(BASE_DIR / ".deer-flow"))).expanduser().resolve()
DEBUG = env.bool("DJANGO_DEBUG", default=False)
