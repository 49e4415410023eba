"""Hybrid ranking: with ``knowledge.embeddings`` set, passages get vectors from the operator's
OpenAI-compatible endpoint (the real ``openai`` client against a loopback server) and a search
fuses full-text and vector ranks; without the endpoint, full text still answers."""

from __future__ import annotations

import os

import pytest
import yaml

from tests.apps.knowledge.fake_embeddings import FakeEmbeddings

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def embeddings(tmp_path, monkeypatch):
    with FakeEmbeddings() as fake:
        config = yaml.safe_load(open(os.environ["DEER_FLOW_CONFIG_PATH"]).read())
        config["knowledge"] = {"embeddings": {"model": "fake-embed", "base_url": fake.base_url, "api_key": "k", "batch_size": 2}}
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        yield fake


def test_passages_get_vectors_and_a_search_finds_a_passage_by_meaning(user_client, kb, embeddings):
    cid = kb.collection()
    kb.upload(cid, ("hr.md", b"# Time off\n\nStaff get thirty holiday days each year.\n\n# Equipment\n\n"
                             b"Laptops are replaced every four years.\n\n# Parking\n\nThe garage has room for forty vehicles."))
    (doc,) = kb.documents(cid)
    assert doc["status"] == "ready" and doc["embedded"] is True
    batches = [r for r in embeddings.requests if r["model"] == "fake-embed"]
    assert [len(r["input"]) for r in batches] == [2, 1]  # batch_size 2, three passages

    # No word of the question is in the passage: only its vector finds it.
    assert kb.search("how many vacation days")[0]["text"] == "Staff get thirty holiday days each year."
    assert kb.search("where do cars go")[0]["text"] == "The garage has room for forty vehicles."
    # Words still count: full text and vectors agree on an exact match.
    assert kb.search("laptops replaced")[0]["text"] == "Laptops are replaced every four years."

    embeddings.down = True  # the endpoint fails at search time: full text answers alone
    assert kb.search("laptops replaced")[0]["text"] == "Laptops are replaced every four years."


def test_an_endpoint_that_fails_during_ingestion_fails_the_document_with_the_reason(user_client, kb, embeddings):
    embeddings.down = True
    cid = kb.collection()
    kb.upload(cid, ("a.md", b"# A\n\nSome text."))
    (doc,) = kb.documents(cid)
    assert doc["status"] == "failed" and "embeddings endpoint failed" in doc["error"] and doc["passage_count"] == 0
    assert kb.search("some text") == []
