"""What thread search costs, on `make run`'s SQLite: the run path writes nothing for it
(the index reads the run journal), so the cost is the search's: catching the FTS5 index up
with the journal events written since the last search, then the query itself.

    .venv/bin/python benchmarks/thread_search_index.py [--events 20000] [--batch 20]

Writes --events message events (a user message and an answer per run) for one user over 50
threads, then times: the first search (indexes everything), a search after --batch new runs
(the usual case), and searches with nothing new (a rare word, a common word, two words).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
ANSWER = ("Lisbon is the capital. In two days: Alfama and the castle, Belém's tower and monastery, a tram 28 ride, "
          "the LX Factory and a sunset at a miradouro. Try pastéis de nata.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="deerflow-bench-search-")
    # Production settings (DEBUG off: no SQL recording on the cursor), a throwaway key.
    os.environ.update({"DEER_FLOW_HOME": home, "DJANGO_SETTINGS_MODULE": "deerflow_site.settings", "DJANGO_DEBUG": "false",
                       "DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "localhost"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.accounts.models import User
    from apps.runs.journal import JournalEvent, journal_append
    from apps.runs.models import Run
    from apps.threads.models import Thread
    from apps.runs.search import thread_text_matches

    user = User.objects.create_user(username="bench", password="x")
    threads = [Thread.objects.create(owner=user, title=f"t{n}") for n in range(50)]
    runs = {t.pk: Run.objects.create(thread=t, owner=user, status="success") for t in threads}

    def write_runs(count: int, start: int) -> None:
        for n in range(start, start + count):
            thread = threads[n % 50]
            question = " ".join(WORDS[(n + k) % 10] for k in range(3)) + f" token{n}"
            journal_append(thread_id=thread.pk, run_id=str(runs[thread.pk].pk), events=[
                JournalEvent("llm.human.input", "message", {"type": "human", "content": question, "id": str(uuid.uuid4())}, {}),
                JournalEvent("llm.ai.response", "message", {"type": "ai", "content": ANSWER, "id": str(uuid.uuid4())}, {}),
            ])

    def timed(query: str) -> float:
        start = time.perf_counter()
        thread_text_matches(user=user, query=query)
        return (time.perf_counter() - start) * 1000

    write_runs(args.events // 2, 0)
    print(f"first search, indexing {args.events} journal events: {timed('token42'):.1f} ms")
    catch_up = []
    for round_ in range(10):
        write_runs(args.batch, args.events + round_ * args.batch)
        catch_up.append(timed("miradouro"))
    print(f"search after {args.batch} new runs: median {statistics.median(catch_up):.2f} ms")
    for query in ("token4242", "miradouro", "alpha bra"):
        print(f"search {query!r}, nothing new: median {statistics.median(timed(query) for _ in range(20)):.2f} ms")


if __name__ == "__main__":
    main()
