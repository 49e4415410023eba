"""Channel layer, Celery and the run executor: embedded unless REDIS_URL / a broker is set."""

from django.core.exceptions import ImproperlyConfigured

from deerflow_site.settings.environment import DEER_FLOW_HOME, env

REDIS_URL = env.str("REDIS_URL", default="")

# channels_redis waits for a consumer's messages with 5 s blocking pops, and redis-py 8 times
# every read out after 5 s unless told otherwise: an idle websocket's pop then failed and the
# socket closed with 1011 every few seconds. The read timeout stays, well above the pop, so that
# a connection that died silently is still noticed.
CHANNEL_LAYER_READ_TIMEOUT = 30
if REDIS_URL:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {
        "hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_LAYER_READ_TIMEOUT}]}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache backs login rate limits and short-lived coordination; shared when Redis is there.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: Redis when CELERY_BROKER_URL (or REDIS_URL) is set; otherwise kombu's filesystem
# transport in folders under DEER_FLOW_HOME, which needs no server and works across the
# processes `make run` starts (Daphne, the worker with embedded beat). Not for several hosts.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
CELERY_BROKER_DIR = DEER_FLOW_HOME / "celery-broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
    # The transport expects its folders to exist in every process that sends or receives.
    for _folder in ("queue", "control"):
        (CELERY_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = env.str("TIME_ZONE", default="UTC")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The connection retry on startup warning is noise for a local broker.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# Scheduled tasks: the largest prompt a task may carry (characters).
SCHEDULED_TASK_MAX_PROMPT_CHARS = env.int("SCHEDULED_TASK_MAX_PROMPT_CHARS", default=20000)

# Where runs execute: "embedded" (asyncio tasks on this process's runs loop) or "celery"
# (worker processes: `celery -A deerflow_site worker -P threads`, see docs/deployment.md).
RUN_EXECUTOR = env.str("RUN_EXECUTOR", default="embedded")
# How long a queued (pending) run may wait for a Celery worker before recovery gives up on it.
RUN_QUEUE_TIMEOUT = env.int("RUN_QUEUE_TIMEOUT", default=600)
# A running run's lease: its process renews it every third of this; once it lapses (the process
# died), recovery settles the run as an error and its thread takes runs again.
RUN_LEASE_SECONDS = env.int("RUN_LEASE_SECONDS", default=30)
# On SIGTERM a server admits no more runs and gives the runs it executes this long to finish;
# the rest go to recovery (apps/runs/shutdown.py). Below Kubernetes' default 30 s
# terminationGracePeriodSeconds, leaving time for the hand-over.
SHUTDOWN_GRACE_SECONDS = env.float("SHUTDOWN_GRACE_SECONDS", default=20.0)
# How stale the run path's views of config files and skill on/off choices may be: each is
# looked at again after this long (an edit in this process drops the skill choices at once).
CONFIG_RECHECK_SECONDS = env.float("CONFIG_RECHECK_SECONDS", default=1.0)
SKILL_STATE_CACHE_SECONDS = env.float("SKILL_STATE_CACHE_SECONDS", default=2.0)
# Where run events travel to subscribers: Redis Streams whenever Redis is configured, so any
# process can serve any run's stream; otherwise this process's memory.
RUN_STREAM_BRIDGE = env.str("RUN_STREAM_BRIDGE", default="redis" if REDIS_URL else "memory")
if RUN_LEASE_SECONDS < 3:
    raise ImproperlyConfigured(f"RUN_LEASE_SECONDS must be at least 3, not {RUN_LEASE_SECONDS}")
if RUN_EXECUTOR not in ("embedded", "celery"):
    raise ImproperlyConfigured(f"RUN_EXECUTOR must be 'embedded' or 'celery', not {RUN_EXECUTOR!r}")
if RUN_STREAM_BRIDGE not in ("memory", "redis"):
    raise ImproperlyConfigured(f"RUN_STREAM_BRIDGE must be 'memory' or 'redis', not {RUN_STREAM_BRIDGE!r}")
if RUN_STREAM_BRIDGE == "redis" and not REDIS_URL:
    raise ImproperlyConfigured("RUN_STREAM_BRIDGE=redis needs REDIS_URL")
if RUN_EXECUTOR == "celery" and RUN_STREAM_BRIDGE != "redis":
    raise ImproperlyConfigured("RUN_EXECUTOR=celery needs REDIS_URL: worker processes stream run events through Redis")

# The graph a run executes: a callable taking the run's RunnableConfig (LangGraph Platform's
# factory convention). Operators may point it at their own graph.
DEERFLOW_AGENT_FACTORY = env.str("DEERFLOW_AGENT_FACTORY", default="harness.agents:make_lead_agent")

# Garbage collector thresholds for server and worker processes (gc.set_threshold). CPython's
# default (700, 10, 10) collects the young generation every 700 net allocations; a run makes
# about a thousand, and a full collection over the agent's import-time heap takes a few hundred
# milliseconds. See docs/deployment.md ("Garbage collection") for the measurements.
GC_THRESHOLD = tuple(env.list("GC_THRESHOLD", cast=int, default=[20000, 10, 10]))
if len(GC_THRESHOLD) != 3 or GC_THRESHOLD[0] < 1 or min(GC_THRESHOLD) < 0:
    raise ImproperlyConfigured(f"GC_THRESHOLD must be three non-negative integers, the first above 0 (like 20000,10,10), not {GC_THRESHOLD!r}")

# Keep each server process (and Celery worker) on one CPU of its own: one Python process runs
# Python on one core at a time anyway, and spreading its threads over cores costs a cross-core
# wake-up per GIL hand-over. See docs/deployment.md ("CPU pinning").
CPU_PINNING = env.bool("CPU_PINNING", default=True)
# Where the processes of a host share out the cores (one lock file per core); processes that
# should not double up on a core need the same folder. Empty: <temp dir>/deerflow-cpus-<uid>.
CPU_PINNING_DIR = env.str("CPU_PINNING_DIR", default="")
