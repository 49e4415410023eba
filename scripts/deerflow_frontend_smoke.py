"""DeerFlow's own Next.js frontend against this server: build it, sign in, chat, reload.

DeerFlow's frontend cannot live in this repository (its code is not ours to copy), so the
suite cannot build it; this script does, from a DeerFlow checkout you provide, and drives it
with Debian's chromium through Playwright the way a user would:

1. serves this checkout as `make run` does, on ``--gateway-port``, with a loopback OpenAI
   server as its model (no provider, no key), a user made by ``createsuperuser``, and the
   frontend's origin trusted (``DEERFLOW_FRONTEND_ORIGINS``);
2. builds the frontend (``pnpm install``, ``next build`` with
   ``DEER_FLOW_INTERNAL_GATEWAY_BASE_URL`` pointing here: its rewrites send ``/api/langgraph/*``
   and ``/api/*`` to this server) unless ``--no-build``, and starts it (``next start``);
3. signs in on its login page, polishes a draft (and undoes it), sends a message, waits for the answer to stream in, reloads the
   thread and checks the conversation is still there, then opens the settings that read this
   server (memory, tools, skills); any API answer of 500 or more fails it. Screenshots go to
   ``--out``.

    .venv/bin/python scripts/deerflow_frontend_smoke.py --frontend ~/src/deer-flow/frontend

It needs Node 20+ (``npx`` fetches the pnpm version the frontend names) and chromium at
``/usr/bin/chromium``. Exit 0 when every step passed; otherwise the step that failed, and the
logs of both servers under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.testing import LoopbackOpenAIServer, Reply, loopback_config_text  # noqa: E402

EMAIL, PASSWORD = "smoke@example.com", "Deer-Flow-Sm0ke!"
ANSWER = "Leek and potato soup goes well with rye bread."


def wait_for(url: str, process: subprocess.Popen, what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                if response.status < 500:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not answer {url} within {seconds:.0f} s")
        time.sleep(0.5)


def pnpm(frontend: Path) -> list[str]:
    version = json.loads((frontend / "package.json").read_text()).get("packageManager", "pnpm").replace("pnpm@", "")
    return ["npx", "-y", f"pnpm@{version}" if version and version != "pnpm" else "pnpm"]


def stop(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def browse(app: str, out: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        failed: list[str] = []  # any API answer of 500 or more, whichever step it came from
        page.on("response", lambda r: failed.append(f"{r.status} {r.request.method} {r.url}")
                if "/api/" in r.url and r.status >= 500 else None)
        page.goto(f"{app}/login")
        page.locator('input[type="email"]').fill(EMAIL)
        page.locator('input[type="password"]').fill(PASSWORD)
        page.locator('button[type="submit"]').click()
        page.wait_for_url("**/workspace/**", timeout=60_000)
        print("signed in:", page.url)
        page.screenshot(path=str(out / "1-signed-in.png"))

        box = page.locator("textarea").first
        # Its composer's Polish button (POST /api/input-polish): the model's rewrite replaces the
        # draft, and Undo puts it back.
        box.fill("soup for rye bread?")
        page.get_by_role("button", name="Polish input").click()
        expect(box).to_have_value(ANSWER, timeout=60_000)
        page.get_by_role("button", name="Undo polish").click()
        expect(box).to_have_value("soup for rye bread?")
        print("polish rewrote the draft and undo restored it")
        box.fill("What soup goes with rye bread?")
        box.press("Enter")
        expect(page.get_by_text(ANSWER)).to_be_visible(timeout=90_000)
        page.wait_for_url("**/chats/**", timeout=30_000)
        print("answered in:", page.url)
        page.screenshot(path=str(out / "2-answered.png"))

        page.reload()
        messages = page.get_by_test_id("main-message-list")
        expect(messages.get_by_text(ANSWER)).to_be_visible(timeout=60_000)
        expect(messages.get_by_text("What soup goes with rye bread?")).to_be_visible()
        print("after a reload the conversation is still there")
        page.screenshot(path=str(out / "3-reloaded.png"))

        # The settings pages that read this server: memory, MCP tools, skills.
        page.get_by_text("Settings and more").click()
        page.get_by_role("menuitem").filter(has_text="Settings").first.click()
        dialog = page.get_by_role("dialog")
        for section, shows in (("Memory", "Export memory"), ("Tools", "MCP"), ("Skills", "data-analysis")):
            dialog.get_by_text(section, exact=True).first.click()
            expect(dialog.get_by_text(shows).first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(out / f"4-settings-{section.lower()}.png"))
            print(f"settings: {section} shows {shows!r}")
        browser.close()
        if failed:
            raise SystemExit("server errors seen by the frontend:\n" + "\n".join(failed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frontend", type=Path, required=True, help="the frontend/ folder of a DeerFlow checkout")
    parser.add_argument("--gateway-port", type=int, default=8765, help="where this server listens (baked into the build)")
    parser.add_argument("--frontend-port", type=int, default=3000)
    parser.add_argument("--no-build", action="store_true", help="use the frontend's existing .next build (made for --gateway-port)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "deerflow-frontend-smoke")
    args = parser.parse_args()
    frontend, out = args.frontend.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    gateway, app = f"http://127.0.0.1:{args.gateway_port}", f"http://127.0.0.1:{args.frontend_port}"

    model = LoopbackOpenAIServer([Reply(text=ANSWER, chunk_size=5)], loop=True).start()
    home = Path(tempfile.mkdtemp(prefix="deerflow-smoke-home-"))
    config = home / "config.yaml"
    config.write_text(loopback_config_text(model.base_url, extra_yaml="sandbox:\n  use: local\n"))
    env = {**os.environ, "DEER_FLOW_HOME": str(home), "DEER_FLOW_CONFIG_PATH": str(config), "PORT": str(args.gateway_port),
           "CPU_PINNING": "false", "DEERFLOW_FRONTEND_ORIGINS": f"{app},http://localhost:{args.frontend_port}"}
    server = web = None
    try:
        server = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, stdout=open(out / "server.log", "w"),
                                  stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(f"{gateway}/api/health", server, "make run")
        subprocess.run([".venv/bin/python", "manage.py", "createsuperuser", "--noinput", "--username", "smoke", "--email", EMAIL],
                       cwd=ROOT, env={**env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD}, check=True)
        node_env = {**os.environ, "DEER_FLOW_INTERNAL_GATEWAY_BASE_URL": gateway, "SKIP_ENV_VALIDATION": "1",
                    "NEXT_TELEMETRY_DISABLED": "1"}
        if not args.no_build:
            subprocess.run([*pnpm(frontend), "install", "--frozen-lockfile"], cwd=frontend, env=node_env, check=True)
            subprocess.run([*pnpm(frontend), "build"], cwd=frontend, env=node_env, check=True)
        # Its memory routes proxy by themselves, to NEXT_PUBLIC_BACKEND_BASE_URL (default :8001), read
        # when they run; set only here, it leaves the build's /api rewrites in place.
        web = subprocess.Popen([*pnpm(frontend), "exec", "next", "start", "-p", str(args.frontend_port), "-H", "127.0.0.1"],
                               cwd=frontend, env={**node_env, "NEXT_PUBLIC_BACKEND_BASE_URL": gateway}, stdout=open(out / "frontend.log", "w"), stderr=subprocess.STDOUT,
                               start_new_session=True)
        wait_for(f"{app}/login", web, "next start")
        browse(app, out)
        print(f"passed; screenshots and logs in {out}")
        return 0
    finally:
        stop(web)
        stop(server)
        model.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
