"""Budgets count memory updates: the updater's model usage is added to the run it learned
from, so the user's day and month include it."""

from __future__ import annotations

import json

import pytest
import yaml

from apps.governance.budgets import budget_window, invalidate_budget_cache
from apps.governance.models import Budget
from apps.memory.updates import get_queue
from apps.runs.models import Run
from harness.testing import Reply
from tests.apps.memory import conftest as mem
from tests.apps.memory.conftest import memory_on  # noqa: F401  (fixture)
from tests.apps.memory.test_runs import run
from tests.apps.runs.test_runs_api import new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_memory_update_counts_toward_the_users_budget(user_client, user, memory_on):  # noqa: F811
    cfg = yaml.safe_load(memory_on.read_text())
    cfg["budgets"] = {"enabled": True}
    memory_on.write_text(yaml.safe_dump(cfg))
    invalidate_budget_cache()
    Budget.objects.create(user=user, daily_tokens=1_000_000)
    mem.set_agent(Reply(text="Noted.", usage={"input_tokens": 100, "output_tokens": 10}))
    mem.set_updater(Reply(text=json.dumps({"newFacts": [{"content": "Likes tea", "category": "preference", "confidence": 0.9}]}),
                          usage={"input_tokens": 500, "output_tokens": 50}))
    tid = new_thread(user_client)
    run(user_client, tid, "I like tea")
    the_run = Run.objects.get(thread_id=tid)
    before = the_run.input_tokens + the_run.output_tokens
    assert get_queue().flush(timeout=30)
    the_run.refresh_from_db()
    assert the_run.input_tokens + the_run.output_tokens == before + 550
    assert the_run.token_usage["memory_tokens"] == 550
    (day,) = budget_window(user_id=user.pk).caps
    assert day.used == before + 550
    invalidate_budget_cache()
