"""Startup behaviour seen from a shell: one-line errors, env switches for the stack."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args, env_overrides, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL", "CELERY_", "DEER_FLOW_CONFIG"))}
    env.update(env_overrides)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("models:\n  - name: m\n    use: nowhere_pkg:Model\n", "models[0].use: module 'nowhere_pkg' is not installed (install it with: pip install nowhere-pkg)"),
        ("models: [\n", "invalid YAML: line 2"),
        ("sandbox:\n  bash_command_timeout: soon\n", "sandbox.bash_command_timeout: Input should be a valid integer"),
    ],
)
def test_invalid_config_stops_startup_with_one_message(tmp_path, config, expected):
    path = tmp_path / "config.yaml"
    path.write_text(config)
    env = {"DJANGO_DEBUG": "true", "DEER_FLOW_CONFIG_PATH": str(path), "DEER_FLOW_HOME": str(tmp_path / "home")}
    for args in (["manage.py", "check"], ["-c", "import deerflow_site.asgi"]):
        result = _run(args, env)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert f"error: {path}: {expected}" in result.stderr, result.stderr


def test_production_mode_requires_a_secret_key(tmp_path):
    result = _run(["manage.py", "check"], {"DEER_FLOW_HOME": str(tmp_path)})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off" in result.stderr


_PRINT = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'db': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']), "
    "'layer': s.CHANNEL_LAYERS['default']['BACKEND'], 'ckpt': s.CHECKPOINTER_URL, 'secure': s.SESSION_COOKIE_SECURE, "
    "'hosts': s.ALLOWED_HOSTS, 'executor': s.RUN_EXECUTOR, 'bridge': s.RUN_STREAM_BRIDGE, "
    "'pool': s.DATABASES['default'].get('OPTIONS', {}).get('pool')}))"
)


def _settings(tmp_path, **env):
    base = {"DJANGO_SETTINGS_MODULE": "deerflow_site.settings", "DEER_FLOW_HOME": str(tmp_path)}
    result = _run(["-c", _PRINT], {**base, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_embedded_defaults(tmp_path):
    s = _settings(tmp_path, DJANGO_DEBUG="true")
    assert s["db"] == "deerflow_site.db.sqlite_backend" and s["name"] == str(tmp_path / "deerflow.sqlite3")
    assert s["layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["ckpt"] == f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}"
    assert s["executor"] == "embedded" and s["bridge"] == "memory" and s["pool"] is None


def test_environment_switches_to_the_distributed_stack(tmp_path):
    s = _settings(
        tmp_path,
        DJANGO_SECRET_KEY="x" * 50,
        ALLOWED_HOSTS="deerflow.example.com",
        DATABASE_URL="postgres://u:p@db.internal:5432/deerflow",
        REDIS_URL="redis://cache.internal:6379/0",
        CELERY_BROKER_URL="redis://cache.internal:6379/1",
    )
    assert s["db"] == "django.db.backends.postgresql"
    assert s["layer"] == "channels_redis.core.RedisChannelLayer"
    assert s["ckpt"] == "postgres://u:p@db.internal:5432/deerflow"
    assert s["secure"] is True and s["hosts"] == ["deerflow.example.com"]
    assert s["executor"] == "embedded" and s["bridge"] == "redis"  # any process can serve any run's stream
    assert s["pool"]["max_size"] == 20


def test_celery_runs_switch(tmp_path):
    s = _settings(tmp_path, DJANGO_DEBUG="true", RUN_EXECUTOR="celery", REDIS_URL="redis://cache.internal:6379/0", DB_POOL_MAX_SIZE="5")
    assert s["executor"] == "celery" and s["bridge"] == "redis"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"RUN_EXECUTOR": "celery"}, "RUN_EXECUTOR=celery needs REDIS_URL"),
        ({"RUN_EXECUTOR": "kubernetes"}, "RUN_EXECUTOR must be 'embedded' or 'celery', not 'kubernetes'"),
        ({"RUN_QUEUE_TIMEOUT": "soon"}, "environment variable RUN_QUEUE_TIMEOUT is not valid"),
        ({"DB_POOL_MAX_SIZE": "many", "DATABASE_URL": "postgres://u:p@db.internal:5432/d"}, "environment variable DB_POOL_MAX_SIZE is not valid"),
        ({"GC_THRESHOLD": "often"}, "environment variable GC_THRESHOLD is not valid"),
        ({"GC_THRESHOLD": "20000,10"}, "GC_THRESHOLD must be three non-negative integers"),
    ],
)
def test_bad_run_stack_settings_stop_startup_with_one_line(tmp_path, env, expected):
    result = _run(["manage.py", "check"], {"DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path), **env})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"error: {expected}" in result.stderr, result.stderr


@pytest.mark.parametrize(("env", "threshold"), [({}, [20000, 10, 10]), ({"GC_THRESHOLD": "50000,5,20"}, [50000, 5, 20])])
def test_server_process_tunes_the_garbage_collector(tmp_path, env, threshold):
    probe = "import gc, json, deerflow_site.asgi; print(json.dumps([gc.get_threshold(), gc.get_freeze_count()]))"
    result = _run(["-c", probe], {"DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path), **env})
    assert result.returncode == 0, result.stderr
    applied, frozen = json.loads(result.stdout.strip().splitlines()[-1])
    assert applied == threshold
    # Startup's heap (Django, the agent's libraries) is frozen out of later collections.
    assert frozen > 50_000


AFFINITY_PROBE = "import json, os; {imports}; print(json.dumps(sorted({{tuple(sorted(os.sched_getaffinity(int(t)))) for t in os.listdir('/proc/self/task')}})))"


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two or more cores")
@pytest.mark.parametrize(
    ("imports", "env", "pinned"),
    [
        ("import deerflow_site.asgi", {}, True),
        ("import deerflow_site.asgi", {"CPU_PINNING": "false"}, False),
        # A Celery worker pins itself when it starts, before its pool's threads.
        ("from deerflow_site.celery import _tune_process; import django; django.setup(); _tune_process()", {}, True),
    ],
)
def test_server_and_worker_processes_keep_to_one_core(tmp_path, imports, env, pinned):
    cores = sorted(os.sched_getaffinity(0))
    result = _run(["-c", AFFINITY_PROBE.format(imports=imports)],
                  {"DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path), "CPU_PINNING_DIR": str(tmp_path / "cpus"), **env})
    assert result.returncode == 0, result.stderr
    per_thread = json.loads(result.stdout.strip().splitlines()[-1])
    # Every thread on one core (the folder is fresh, so any is free), or all on every core.
    if pinned:
        assert len(per_thread) == 1 and len(per_thread[0]) == 1 and per_thread[0][0] in cores, per_thread
    else:
        assert per_thread == [cores]
