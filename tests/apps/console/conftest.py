import os
from datetime import datetime, timedelta, timezone as dt_tz
from pathlib import Path

import pytest
import yaml

from apps.runs.models import Run
from apps.threads.models import Thread


@pytest.fixture
def priced_config(tmp_path, monkeypatch):
    """The suite's config with three models: priced with a cache price, priced without one,
    and unpriced."""
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    model = base["models"][0]
    base["models"] = [
        {**model, "name": "pro", "pricing": {"input_per_million": 2.0, "output_per_million": 8.0, "input_cache_hit_per_million": 0.5}},
        {**model, "name": "lite", "pricing": {"input_per_million": 1.0, "output_per_million": 3.0}},
        {**model, "name": "free"},
    ]
    path = tmp_path / "config-priced.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    return path


@pytest.fixture
def seed_run():
    counter = {"n": 0}

    def seed(owner, *, at: datetime, by_model: dict | None = None, status="success", thread=None, title="", model_name="",
             tokens=None, error="", duration_s=None):
        counter["n"] += 1
        if thread is None:
            thread = Thread.objects.create(id=f"t-{owner.pk}-{counter['n']}", owner=owner, title=title or f"Thread {counter['n']}")
        by_model = by_model or {}
        inp = sum(e.get("input_tokens", 0) for e in by_model.values())
        out = sum(e.get("output_tokens", 0) for e in by_model.values())
        cache = sum(e.get("cache_read_tokens", 0) for e in by_model.values())
        if tokens:
            inp, out, cache = tokens
        run = Run.objects.create(thread=thread, owner=owner, status=status, model_name=model_name or next(iter(by_model), ""),
                                 input_tokens=inp, output_tokens=out, cache_read_tokens=cache, error=error,
                                 token_usage={"by_model": by_model} if by_model else {})
        finished = None if status in Run.ACTIVE_STATUSES else at + timedelta(seconds=duration_s or 0)
        Run.objects.filter(pk=run.pk).update(created_at=at, started_at=at, finished_at=finished)
        run.refresh_from_db()
        return run

    return seed


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=dt_tz.utc)


@pytest.fixture
def staff_client(django_user_model):
    from django.test import Client

    admin = django_user_model.objects.create_superuser(username="root", email="root@example.com", password="pw-root-123")
    client = Client()
    client.force_login(admin)
    client.admin = admin
    return client
