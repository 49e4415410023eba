"""The shipped Grafana dashboard queries only metrics the code defines."""

import json
import re
from pathlib import Path

from harness.observability import metrics

ROOT = Path(__file__).resolve().parents[3]


def test_dashboard_queries_name_defined_metrics():
    metrics.configure(enabled=True)
    defined = {m._name for m in vars(metrics._m).values()} | {"deerflow_runs_queued"}
    dashboard = json.loads((ROOT / "docs" / "grafana" / "deerflow-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert exprs
    used = {re.sub(r"_(total|bucket|count|sum)$", "", name) for e in exprs for name in re.findall(r"deerflow_[a-z_]+", e)}
    assert used and used <= defined, used - defined
    assert defined - {"deerflow_runs_started"} <= used  # every metric but the plain start counter has a panel
