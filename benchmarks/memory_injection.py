"""Memory injection cost per turn: retrieval + assembly of the ``<memory>`` block.

Stores 1,000 facts for one user in a fresh database (SQLite by default; DATABASE_URL for
PostgreSQL), then times ``apps.memory.selectors.memory_context`` (what the run worker calls
before every run with memory on) for 200 different queries and prints the median and p90.
Target: median <= 5 ms on SQLite. The updater costs one model call per update, by design.

Usage:  .venv/bin/python benchmarks/memory_injection.py [--facts 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = ("sailing python lisbon coffee marathon kubernetes jazz gardening budget travel spanish recipes "
         "vegetarian cycling photography chess postgres rust mentoring podcasts climbing piano").split()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="memory-bench-")
    os.environ.setdefault("DEER_FLOW_HOME", home)
    os.environ.setdefault("DJANGO_DEBUG", "true")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from apps.memory.selectors import memory_context
    from apps.memory.stores import DjangoMemoryStore
    from harness.memory import Fact

    rng = random.Random(7)
    user = get_user_model().objects.create_user(f"bench-{rng.random()}", password="x")
    store = DjangoMemoryStore()
    doc = store.load(str(user.pk))
    doc.summaries.update(work_context="Staff engineer on a data platform team.", top_of_mind="Preparing a conference talk.")
    doc.facts = [Fact(id=f"f{i}", content=" ".join(rng.sample(WORDS, 6)) + f" note {i}", confidence=rng.random())
                 for i in range(args.facts)]
    store.save(doc)
    queries = [" ".join(rng.sample(WORDS, 3)) + " please help me with this" for _ in range(args.queries)]
    for q in queries[:10]:  # warm-up
        memory_context(owner_id=user.pk, agent="", query=q, max_tokens=2000)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        text = memory_context(owner_id=user.pk, agent="", query=q, max_tokens=2000).text
        times.append((time.perf_counter() - t0) * 1000)
        assert text and "<memory>" in text
    times.sort()
    print(json.dumps({"database": connection.vendor, "facts": args.facts, "queries": args.queries,
                      "injection_ms_median": round(statistics.median(times), 2),
                      "injection_ms_p90": round(times[int(len(times) * 0.9)], 2),
                      "updater_model_calls_per_update": 1}, indent=2))


if __name__ == "__main__":
    main()
