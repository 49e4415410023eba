"""Prometheus metrics of runs, models, tools, the sandbox, streams and HTTP.

Off unless ``configure(enabled=True)`` is called (the site does it when ``METRICS_ENABLED``
is set): until then every recording function returns at its first line and
``prometheus_client`` is not even imported, so a run pays nothing for metrics nobody reads.

On, a recording is an in-memory increment: a dict lookup for the labels and an add, or in
multi-process mode (``PROMETHEUS_MULTIPROC_DIR``) a write into a memory-mapped file that
the scraping process sums with every other process's (servers, Celery workers). No
recording does any other IO.
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from typing import Any

# Seconds. Runs take from well under a second (an instant model) to many minutes.
RUN_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, float("inf"))
FIRST_EVENT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, float("inf"))
COMMAND_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf"))
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, float("inf"))

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens")


@dataclass
class _Metrics:
    runs_started: Any
    runs_finished: Any
    run_duration: Any
    first_event: Any
    runs_active: Any
    subscribers: Any
    model_tokens: Any
    tool_calls: Any
    sandbox_commands: Any
    http_requests: Any
    http_latency: Any


_m: _Metrics | None = None
_multiproc_dir: str | None = None


def enabled() -> bool:
    return _m is not None


def multiproc_dir() -> str | None:
    return _multiproc_dir


def configure(*, enabled: bool, multiproc_dir: str | None = None) -> None:
    """Create the metrics (once per process). ``multiproc_dir``: the folder every process of
    this host shares, making the values multi-process (prometheus_client's multiprocess mode)."""
    global _m, _multiproc_dir
    if not enabled or _m is not None:
        return
    if multiproc_dir:
        os.makedirs(multiproc_dir, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = multiproc_dir
        _multiproc_dir = multiproc_dir
    from prometheus_client import Counter, Gauge, Histogram, values

    if multiproc_dir:
        # The value class is chosen when prometheus_client is first imported; it may have been
        # imported before the folder was known.
        values.ValueClass = values.get_value_class()
        from prometheus_client import multiprocess

        # A process that exits takes its live gauges (active runs, subscribers) with it: its own
        # pid, read at exit, since a process forked after this ran would otherwise take its parent's.
        atexit.register(lambda: multiprocess.mark_process_dead(os.getpid()))
    _m = _Metrics(
        runs_started=Counter("deerflow_runs_started", "Runs a worker began executing."),
        runs_finished=Counter("deerflow_runs_finished", "Runs that finished, by final status.", ["status"]),
        run_duration=Histogram("deerflow_run_duration_seconds", "From a worker's claim of a run to its finish.", ["status"],
                               buckets=RUN_BUCKETS),
        first_event=Histogram("deerflow_run_first_event_seconds", "From a run's admission to the first event its graph streamed.",
                              buckets=FIRST_EVENT_BUCKETS),
        runs_active=Gauge("deerflow_runs_active", "Runs executing now.", multiprocess_mode="livesum"),
        subscribers=Gauge("deerflow_stream_subscribers", "Clients following a run's stream now (SSE, websocket, wait, join).",
                          ["transport"], multiprocess_mode="livesum"),
        model_tokens=Counter("deerflow_model_tokens", "Model tokens of finished runs, by config.yaml model name.", ["model", "kind"]),
        tool_calls=Counter("deerflow_tool_calls", "Tool calls that returned a result, by tool and status.", ["tool", "status"]),
        sandbox_commands=Histogram("deerflow_sandbox_command_seconds", "Sandbox command durations, by outcome.", ["outcome"],
                                   buckets=COMMAND_BUCKETS),
        http_requests=Counter("deerflow_http_requests", "HTTP requests, by route pattern, method and status.", ["route", "method", "status"]),
        http_latency=Histogram("deerflow_http_request_seconds", "Time to a response's headers, by route pattern and method.",
                               ["route", "method"], buckets=HTTP_BUCKETS),
    )


# -- recording: each returns at once while metrics are off ----------------------------------


def run_started() -> None:
    if _m is None:
        return
    _m.runs_started.inc()
    _m.runs_active.inc()


def run_finished(status: str, seconds: float, usage_by_model: dict | None = None) -> None:
    if _m is None:
        return
    _m.runs_active.dec()
    _m.runs_finished.labels(status).inc()
    _m.run_duration.labels(status).observe(seconds)
    for model, usage in (usage_by_model or {}).items():
        for kind in TOKEN_KINDS:
            count = usage.get(kind) or 0
            if count:
                _m.model_tokens.labels(model, kind.removesuffix("_tokens")).inc(count)


def first_event(seconds: float) -> None:
    if _m is None:
        return
    _m.first_event.observe(max(seconds, 0.0))


def tool_call(tool: str, status: str) -> None:
    if _m is None:
        return
    _m.tool_calls.labels(tool or "unknown", status or "success").inc()


def sandbox_command(seconds: float, outcome: str) -> None:
    if _m is None:
        return
    _m.sandbox_commands.labels(outcome).observe(seconds)


def subscriber(transport: str, delta: int) -> None:
    if _m is None:
        return
    _m.subscribers.labels(transport).inc(delta)


def http_request(route: str, method: str, status: int, seconds: float) -> None:
    if _m is None:
        return
    _m.http_requests.labels(route, method, str(status)).inc()
    _m.http_latency.labels(route, method).observe(seconds)


def render(extra_collectors: tuple = ()) -> tuple[bytes, str]:
    """(body, content type) of a scrape: this process's metrics, or in multi-process mode
    every process's under the shared folder, summed; plus ``extra_collectors``."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

    if _multiproc_dir:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=_multiproc_dir)
    elif extra_collectors:
        registry = CollectorRegistry()
        registry.register(_Forward(REGISTRY))
    else:
        registry = REGISTRY
    for collector in extra_collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Forward:
    """This process's default registry, inside a per-scrape registry with extra collectors."""

    def __init__(self, registry: Any):
        self._registry = registry

    def collect(self):
        return self._registry.collect()
