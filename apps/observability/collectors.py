"""Metrics read from the database at scrape time, not counted by any process."""

from __future__ import annotations


class QueuedRunsCollector:
    """``deerflow_runs_queued``: runs admitted and not yet claimed by a worker. Read from the
    database, so it is the whole deployment's number, the same from every server (take the
    max across instances, not the sum)."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from apps.runs.selectors import pending_run_count

        family = GaugeMetricFamily("deerflow_runs_queued", "Runs admitted and waiting for a worker (pending), deployment-wide.")
        family.add_metric([], pending_run_count())
        yield family
