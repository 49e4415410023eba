"""Time and memory of one browser session: start (launch Chromium behind its guard proxy and open
the page), snapshot, close, through the agent's own tools against a local page.

Usage: .venv/bin/python benchmarks/browser_session.py [--sessions 10]

For each session: wall time of ``browser_navigate`` on a fresh thread (the launch is inside it),
of ``browser_snapshot``, and of ``browser_close``; and the memory of the session's Chromium
process tree while it is open (RSS and PSS summed over the browser, its renderer, GPU and
utility processes, from /proc). Reports median and worst, with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAGE = (b"<html><head><title>Bench</title></head><body><h1>Bench</h1><form><input name=q><button>Go</button></form>"
        b"<script>for (let i = 0; i < 50; i++) { const a = document.createElement('a'); a.href = '#' + i; "
        b"a.textContent = 'Link ' + i; document.body.append(a); }</script></body></html>")


class _Page(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


def _tree(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _memory_kib(pids: list[int]) -> tuple[int, int]:
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss, pss


def _browser_root(proxy_port: int) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if f"--proxy-server=http://127.0.0.1:{proxy_port}" in cmdline and "--type=" not in cmdline:
                return int(entry)
    return None


async def _call(tool, args, thread: str) -> float:
    from langgraph.config import var_child_runnable_config

    config = {"configurable": {"thread_id": thread, "user_id": "bench", "run_id": "bench-run"}}
    token = var_child_runnable_config.set(config)
    start = time.perf_counter()
    try:
        msg = await tool.ainvoke({"name": tool.name, "args": args, "id": uuid.uuid4().hex, "type": "tool_call"}, config=config)
    finally:
        var_child_runnable_config.reset(token)
    if msg.status == "error":
        raise SystemExit(f"{tool.name} failed: {msg.content}")
    return (time.perf_counter() - start) * 1000


async def main(sessions: int) -> None:
    from harness.config.app_config import AppConfig
    from harness.tools.browser import BrowserCloseTool, BrowserNavigateTool, BrowserSnapshotTool
    from harness.tools.browser.session import get_browser_service

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    app = AppConfig.model_validate({"browser": {"allowed_private_networks": ["127.0.0.1/32"], "live_view": False}})
    nav, snap, close = (cls.from_app_config(app) for cls in (BrowserNavigateTool, BrowserSnapshotTool, BrowserCloseTool))
    service = get_browser_service()
    starts, snaps, closes, rss, pss = [], [], [], [], []
    await _call(nav, {"url": url}, "warm-up")  # the first launch also starts Playwright's driver
    await _call(close, {}, "warm-up")
    for i in range(sessions):
        thread = f"bench-{i}"
        starts.append(await _call(nav, {"url": url}, thread))
        snaps.append(await _call(snap, {}, thread))
        root = _browser_root(service._sessions[("bench", thread)].proxy.port)
        if root is not None:
            r, p = _memory_kib(_tree(root))
            rss.append(r / 1024)
            pss.append(p / 1024)
        closes.append(await _call(close, {}, thread))
    server.shutdown()

    def line(name: str, values: list[float], unit: str) -> str:
        return f"{name:<22} median {statistics.median(values):8.1f} {unit}   worst {max(values):8.1f} {unit}"

    print(f"browser sessions: {sessions}   load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   cores: {os.cpu_count()}")
    print(line("start + navigate", starts, "ms"))
    print(line("snapshot", snaps, "ms"))
    print(line("close", closes, "ms"))
    if rss:
        print(line("memory open (RSS)", rss, "MiB"))
        print(line("memory open (PSS)", pss, "MiB"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="deerflow-bench-browser-")
    os.environ["DEER_FLOW_HOME"] = home
    asyncio.run(main(args.sessions))
