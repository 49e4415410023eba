"""Metrics (Prometheus) and request correlation. Tracing is configured in config.yaml
(``tracing:``, see docs/observability.md), since the harness builds the callbacks."""

from deerflow_site.settings.base import MIDDLEWARE
from deerflow_site.settings.environment import env

# /metrics exists only when this is on; the HTTP metrics middleware too.
METRICS_ENABLED = env.bool("METRICS_ENABLED", default=False)
# A scraper presenting `Authorization: Bearer <METRICS_TOKEN>` may scrape from anywhere.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# Addresses (CIDR networks) that may scrape without the token. Loopback by default; an empty
# value (METRICS_ALLOWED_IPS=) leaves only the token.
METRICS_ALLOWED_IPS = env.list("METRICS_ALLOWED_IPS", default=["127.0.0.1/32", "::1/128"])
# The folder every process of this host (servers, Celery workers) writes its metrics to, and
# the scrape sums: prometheus_client's multiprocess mode. Empty: each process counts alone.
# Clear it when the host's processes (re)start; see docs/observability.md.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")

if METRICS_ENABLED:
    from apps.observability.access import parse_networks

    parse_networks(METRICS_ALLOWED_IPS)  # a typo fails the start, not every scrape
    # Right after the request id: the timing covers everything else, and /metrics is answered
    # before the URL resolver and the accounts middleware.
    MIDDLEWARE.insert(MIDDLEWARE.index("deerflow_site.request_id.RequestIdMiddleware") + 1,
                      "apps.observability.middleware.MetricsMiddleware")
