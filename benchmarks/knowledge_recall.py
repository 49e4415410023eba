"""Knowledge retrieval quality: recall@5 on a small labelled set.

Ingests the documents of ``benchmarks/data/knowledge_labelled.json`` (a made-up company's
handbook, policies and guides, as Markdown) through the real ingestion path into a fresh
database, asks each labelled question through ``DjangoKnowledgeStore.search`` (what the
agent's ``knowledge_search`` calls) and counts a hit when the passage holding the labelled
answer is among the first five. Prints recall@1, recall@5 and MRR, and the misses.

``--embeddings`` runs it again with vectors from the loopback fake of
tests/apps/knowledge/fake_embeddings.py (hashed words with a tiny synonym table): that
measures the fusion code, not a real embedding model; point ``knowledge.embeddings`` at one
and pass ``--config`` to measure it.

Usage:  .venv/bin/python benchmarks/knowledge_recall.py [--embeddings] [--config config.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "data" / "knowledge_labelled.json"


def evaluate(store, scope, questions) -> dict:
    ranks, misses = [], []
    for item in questions:
        found = store.search(scope, item["q"], 5)
        rank = next((i + 1 for i, p in enumerate(found) if item["answer"] in p.text), None)
        ranks.append(rank)
        if rank is None:
            misses.append({"q": item["q"], "top": found[0].text[:80] if found else None})
    n = len(questions)
    return {"questions": n, "recall_at_1": round(sum(r == 1 for r in ranks) / n, 3),
            "recall_at_5": round(sum(r is not None for r in ranks) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3), "misses": misses}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embeddings", action="store_true", help="also run with the loopback fake embeddings")
    parser.add_argument("--config", help="a config.yaml whose knowledge: section to use")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="knowledge-recall-"))
    os.environ.setdefault("DEER_FLOW_HOME", str(home))
    os.environ.setdefault("DJANGO_DEBUG", "true")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")
    fake = None
    if args.config:
        os.environ["DEER_FLOW_CONFIG_PATH"] = str(Path(args.config).resolve())
    elif args.embeddings:
        from tests.apps.knowledge.fake_embeddings import FakeEmbeddings

        fake = FakeEmbeddings().__enter__()
        config = home / "config.yaml"
        config.write_text(f"knowledge:\n  embeddings:\n    model: fake\n    base_url: {fake.base_url}\n    api_key: k\n")
        os.environ["DEER_FLOW_CONFIG_PATH"] = str(config)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.knowledge import queue, services
    from apps.knowledge.stores import DjangoKnowledgeStore
    from harness.config import get_app_config
    from harness.knowledge import SearchScope

    data = json.loads(DATA.read_text())
    user = get_user_model().objects.create_user("recall-bench", password="x")
    collection = services.collection_create(user=user, name="Company")
    files = [services.IncomingFile(name=name, file=SimpleUploadedFile(name, text.encode())) for name, text in data["documents"].items()]
    services.document_add_uploads(user=user, collection_id=collection.pk, files=files)
    assert queue.drain(timeout=600)
    result = evaluate(DjangoKnowledgeStore(), SearchScope(user_id=str(user.pk)), data["questions"])
    result["ranking"] = "hybrid" if get_app_config().knowledge.embeddings.model else "full text"
    print(json.dumps(result, indent=2))
    if fake is not None:
        fake.__exit__(None, None, None)


if __name__ == "__main__":
    main()
