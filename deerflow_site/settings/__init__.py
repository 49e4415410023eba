"""Settings, split by topic and driven by the environment.

Defaults are the embedded mode (SQLite under DEER_FLOW_HOME, in-memory channel layer,
in-process runs); DATABASE_URL, REDIS_URL and CELERY_BROKER_URL switch to the distributed
stack. With DJANGO_DEBUG off (the default) a secret key is required.
"""

from deerflow_site.settings.base import *  # noqa: F401,F403
from deerflow_site.settings.database import *  # noqa: F401,F403
from deerflow_site.settings.security import *  # noqa: F401,F403
from deerflow_site.settings.services import *  # noqa: F401,F403
from deerflow_site.settings.api import *  # noqa: F401,F403
from deerflow_site.settings.auth import *  # noqa: F401,F403
from deerflow_site.settings.logging import *  # noqa: F401,F403
from deerflow_site.settings.observability import *  # noqa: F401,F403
