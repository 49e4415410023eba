"""ASGI entry point: HTTP through Django, websockets through Channels.

A broken config.yaml ends startup with one line naming the file, field and reason.
"""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")

from django.core.exceptions import ImproperlyConfigured  # noqa: E402

from harness.config import ConfigError  # noqa: E402

from deerflow_site.server.handlers import get_asgi_application  # noqa: E402

try:
    django_asgi_app = get_asgi_application()
except (ConfigError, ImproperlyConfigured) as exc:
    print(f"error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None

from deerflow_site.server.cpu_pinning import pin_process  # noqa: E402

# Before the startup work below starts threads: they inherit the core.
pin_process()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from deerflow_site.server.body_limits import RequestGuard  # noqa: E402
from deerflow_site.routing import websocket_urlpatterns  # noqa: E402
from apps.runs.handoff import serve_offered_runs  # noqa: E402
from apps.runs.recovery import recover_on_startup  # noqa: E402
from apps.runs.runtime import get_runtime  # noqa: E402
from apps.threads.uploads import sweep_staging_files  # noqa: E402
from apps.memory.updates import resume_saved_updates  # noqa: E402

from harness.sandbox import get_sandbox_provider  # noqa: E402

from deerflow_site.server.gc_tuning import tune_gc  # noqa: E402

# Runs a crashed process left active would hold their threads forever: settle them now, and
# from now on whenever a lease lapses (the runs loop's sweep, started here, not by a first run).
recover_on_startup(get_runtime())
# Runs a Celery worker admits (beat's firings) are executed here, where clients can watch them.
serve_offered_runs()
# Other server processes behind the same port (WEB_PROCESSES) read the runs executing here.
get_runtime().serve_streams_to_peers()
# Upload staging files a crash left behind are never anyone's file: remove them.
sweep_staging_files()
# Memory updates the last stop could not apply in time (deerflow_site/server/daphne_server.py) are due now.
resume_saved_updates()
# Choose the sandbox provider now, so "isolated" or the no-isolation warning shows at startup;
# the container provider removes what a crashed server left and starts its warm pool.
get_sandbox_provider().warm_up()

# Last: what startup loaded is the heap the collector may leave alone from now on.
tune_gc()

application = ProtocolTypeRouter(
    {
        "http": RequestGuard(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
