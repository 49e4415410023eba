"""A new chat's first message in a real browser: Enter → the model request, in app time.

The site as `make run` serves it (``deerflow_site.server.web_processes``, SQLite, runs in the
process, ``DJANGO_DEBUG`` on as `make run` has it) reading config.example.yaml as it ships, its
one model (``langchain_openai:ChatOpenAI``) pointed by ``OPENAI_BASE_URL`` at a
``LoopbackOpenAIServer`` in this process, which notes the wall-clock time each request
arrives. Chromium (Debian's, driven by Playwright as tests/ui/ drives it) signs in once; each
repetition opens ``/`` in a fresh page, types a message, waits ``--think-seconds`` (a person
reads what they typed; the page may use that time) and presses Enter. A capturing ``keydown``
listener notes the browser's wall-clock time of the Enter (``performance.timeOrigin +
performance.now()``, the same clock as the server's ``time.time()`` on one machine); the figure
is the model request carrying that message minus that time. Each repetition waits for the
answer on the page before the next one.

Prints each repetition's milliseconds, their median and p90, and the load average before and
after, as JSON.

    .venv/bin/python benchmarks/first_message.py [--repetitions 15] [--think-seconds 1]

Figures go to docs/runs.md's table and benchmarks/HISTORY.md, with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import start_make_run_stack  # noqa: E402
from harness.testing import LoopbackOpenAIServer, Reply  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PASSWORD = "pw-bench-first-message-1"
MEMORY = Reply(text=json.dumps({"user": {"topOfMind": "benchmarks"}, "newFacts": [], "factsToRemove": []}))
CHAT = Reply(text="A short answer from the benchmark model.")
ENTER_LISTENER = """
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) window.__enterAt = performance.timeOrigin + performance.now();
}, true);
"""


def reply(messages: list[dict]) -> Reply:
    first = str(messages[0].get("content", "")) if messages else ""
    return MEMORY if first.startswith("You maintain the long-term memory") else CHAT


def load() -> float:
    return round(os.getloadavg()[0], 1)


def start_server(base_url: str, home: Path):
    env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "unused", "OPENAI_MODEL": "test-model",
           # `make run`'s own defaults (scripts/run.sh, settings)
           "DJANGO_DEBUG": "true", "LOG_LEVEL": "INFO", "DJANGO_LOG_LEVEL": "INFO", "CONFIG_RECHECK_SECONDS": "1"}
    return start_make_run_stack(home, config_text=(ROOT / "config.example.yaml").read_text(), extra_env=env)


def arrival_of(model: LoopbackOpenAIServer, text: str, deadline: float) -> float:
    """The wall-clock time the chat request carrying ``text`` reached the model server."""
    while time.monotonic() < deadline:
        for body, arrived in zip(list(model.requests), list(model.request_times), strict=False):
            if text in json.dumps(body.get("messages") or []):
                return arrived
        time.sleep(0.002)
    raise RuntimeError(f"no model request carried {text!r}")


def measure(args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright

    model = LoopbackOpenAIServer([reply], loop=True).start()
    server = start_server(model.base_url, Path(tempfile.mkdtemp(prefix="deerflow-first-message-")))
    figures: list[float] = []
    load_before = load()
    try:
        server.shell("from apps.accounts.models import User\n"
                     f"User.objects.create_user(username='bench', email='bench@example.com', password={PASSWORD!r})")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(base_url=server.url)
            page = context.new_page()
            page.goto("/accounts/login/")
            page.get_by_label("Username or email").fill("bench")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{server.url}/")
            state = context.storage_state()
            context.close()
            for index in range(args.warmup + args.repetitions):
                context = browser.new_context(base_url=server.url, storage_state=state)
                context.add_init_script(ENTER_LISTENER)
                page = context.new_page()
                page.goto("/")
                page.wait_for_function("document.body.dataset.ready === '1'")
                text = f"First message {uuid.uuid4().hex[:12]}"
                box = page.get_by_label("Message", exact=True)
                box.fill(text)
                page.wait_for_timeout(args.think_seconds * 1000)
                box.press("Enter")
                arrived = arrival_of(model, text, time.monotonic() + 60)
                enter_at = page.evaluate("window.__enterAt")
                page.locator("article.msg.assistant").filter(has_text="A short answer").wait_for(timeout=60_000)
                context.close()
                if index >= args.warmup:
                    figures.append(round(arrived * 1000 - enter_at, 1))
            browser.close()
    finally:
        server.stop()
        model.stop()
    return {"enter_to_model_request_ms": figures, "median_ms": round(statistics.median(figures), 1),
            "p90_ms": round(statistics.quantiles(figures, n=10, method="inclusive")[-1], 1),
            "load_before": load_before, "load_after": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2, help="first messages not counted (the server's first runs warm its caches)")
    parser.add_argument("--think-seconds", type=float, default=1.0, help="between typing and Enter")
    print(json.dumps(measure(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
