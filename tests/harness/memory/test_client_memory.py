"""The embedded client with a file store: learn from a thread, recall in a new one,
incognito turns, the system prompt unchanged."""

from __future__ import annotations

import json

import pytest

from harness.client import DeerFlowClient
from harness.config import parse_config
from harness.memory import FileMemoryStore
from harness.testing import ScriptedChatModel


@pytest.fixture
def app():
    return parse_config("memory:\n  enabled: true\n  max_injection_tokens: 500\n")


def first_user(request) -> str:
    return next(str(m.content) for m in request.messages if m.type == "human")


def test_client_learns_and_recalls_with_a_file_store(tmp_path, app):
    store = FileMemoryStore(tmp_path)
    model = ScriptedChatModel(script=["Noted.", "Use grams.", "Sure."])
    client = DeerFlowClient(model=model, tools=[], app_config=app, memory_store=store, user_id="ana")
    client.chat("I use metric units", thread_id="t1")
    updater = ScriptedChatModel(script=[json.dumps({"newFacts": [{"content": "Uses metric units", "confidence": 0.9}]})])
    outcome = client.update_memory("t1", model=updater)
    assert len(outcome.added) == 1 and store.load("ana").facts[0].source_thread_id == "t1"

    client.chat("How much flour?", thread_id="t2")
    assert "Uses metric units" in first_user(model.requests[1])
    client.chat("Anything", thread_id="t3", memory=False)
    assert "<memory>" not in first_user(model.requests[2])
    assert model.requests[0].system_text == model.requests[1].system_text
    assert store.load("someone-else").facts == []
