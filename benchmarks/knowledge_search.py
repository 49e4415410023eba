"""Knowledge search latency: 10,000 passages on SQLite, searched as the agent's tool does.

Builds one collection of ``--passages`` passages (sentences drawn from a vocabulary, so each
query term matches hundreds of them) in a fresh database (SQLite by default; DATABASE_URL for
PostgreSQL), plus 20 other users' collections the search must not read, then times
``DjangoKnowledgeStore.search`` (what ``knowledge_search`` calls: access check, full-text
query, rows) for ``--queries`` queries. Prints p50 and p95. Target: p95 < 50 ms on SQLite.

Usage:  .venv/bin/python benchmarks/knowledge_search.py [--passages 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = ("invoice refund shipping warehouse laptop printer holiday salary pension travel hotel train budget audit "
         "contract supplier customer complaint warranty repair password network security backup database server "
         "meeting deadline project release roadmap office parking kitchen cleaning insurance training onboarding "
         "manager review bonus overtime expense receipt approval policy handbook safety fire emergency").split()
FILLER = "the a of to and in for is on with that by this be are from at as it or".split()


def sentence(rng: random.Random) -> str:
    words = rng.sample(WORDS, 5) + rng.sample(FILLER, 6)
    rng.shuffle(words)
    return " ".join(words).capitalize() + "."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    os.environ.setdefault("DEER_FLOW_HOME", tempfile.mkdtemp(prefix="knowledge-bench-"))
    os.environ.setdefault("DJANGO_DEBUG", "true")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from apps.knowledge.models import Collection, Document, Passage
    from apps.knowledge.stores import DjangoKnowledgeStore
    from harness.knowledge import SearchScope
    from harness.knowledge.types import citation_id
    from harness.knowledge.chunking import search_text
    from harness.knowledge.types import Chunk

    rng = random.Random(11)
    users = get_user_model()

    def fill(owner, count: int, per_document: int = 50) -> None:
        collection = Collection.objects.create(owner=owner, name=f"bench-{owner.pk}")
        made = 0
        while made < count:
            document = Document.objects.create(collection=collection, name=f"doc-{made}.md", source_kind="upload",
                                               status="ready", is_current=True, progress=100)
            rows = []
            for i in range(min(per_document, count - made)):
                text = " ".join(sentence(rng) for _ in range(4))
                chunk = Chunk(ordinal=i, text=text, section=f"Section {i % 7}")
                rows.append(Passage(document=document, collection=collection, ordinal=i, citation_id=citation_id(document.pk.hex, i),
                                    section=chunk.section, text=text, search_text=search_text(chunk)))
            Passage.objects.bulk_create(rows, batch_size=1000)
            made += len(rows)

    reader = users.objects.create_user(f"reader-{rng.random()}", password="x")
    fill(reader, args.passages)
    for n in range(20):  # other people's passages, in the same index, out of reach
        fill(users.objects.create_user(f"other-{n}-{rng.random()}", password="x"), 500)
    store = DjangoKnowledgeStore()
    scope = SearchScope(user_id=str(reader.pk))
    queries = [f"what does the {' '.join(rng.sample(WORDS, 3))} say" for _ in range(args.queries)]
    for q in queries[:20]:  # warm-up: page cache, prepared statements
        store.search(scope, q, 5)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        found = store.search(scope, q, 5)
        times.append((time.perf_counter() - t0) * 1000)
        assert len(found) == 5
    times.sort()
    print(json.dumps({"database": connection.vendor, "passages_in_reach": args.passages,
                      "passages_in_index": Passage.objects.count(), "queries": args.queries,
                      "search_ms_p50": round(times[len(times) // 2], 2),
                      "search_ms_p95": round(times[int(len(times) * 0.95)], 2),
                      "target_p95_ms": 50}, indent=2))


if __name__ == "__main__":
    main()
