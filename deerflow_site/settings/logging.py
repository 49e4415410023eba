"""Console logging: key=value lines by default, one JSON object per line with LOG_FORMAT=json."""

from deerflow_site.settings.environment import env

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"()": "deerflow_site.log_format.KeyValueFormatter"},
        "json": {"()": "deerflow_site.log_format.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": env.str("LOG_FORMAT", default="text")},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"level": env.str("DJANGO_LOG_LEVEL", default="INFO").upper(), "propagate": True},
        "daphne": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "asyncio": {"level": "WARNING"},
    },
}
