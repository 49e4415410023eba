"""The agent's browser against local pages served by the test: a JavaScript-rendered page's
text reaches the model through the snapshot, a form is filled and submitted with click/type,
a redirect to a blocked address is refused mid-chain (nothing reaches it), two threads'
cookies never mix, downloads land in the workspace, web_capture saves Markdown and PDF, and
max_sessions queues and then refuses. Chromium is Debian's; only 127.0.0.1/32 is allow-listed,
so 127.0.0.2 (where a second server listens) stands for a private address."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import threading
import uuid
from urllib.parse import parse_qs

import pytest
from langchain_core.messages import ToolMessage

from harness.config.app_config import AppConfig, SandboxConfig
from harness.config.paths import thread_user_data_dir
from harness.tools.browser import (BrowserClickTool, BrowserCloseTool, BrowserGetTextTool, BrowserNavigateTool,
                                   BrowserScreenshotTool, BrowserSnapshotTool, BrowserTypeTool, WebCaptureTool)
from harness.sandbox import reset_sandbox_provider, set_sandbox_provider
from harness.sandbox.local import LocalSandboxProvider
from harness.tools.browser.session import get_browser_service
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium (make test installs it)")]

PAGES = {
    "/": ("text/html", b"<html><head><title>Home</title></head><body><h1>Welcome</h1><div id=out></div>"
                       b"<script>document.getElementById('out').textContent='Rendered by script: the answer is 42';</script>"
                       b"<a href='/form'>Sign up</a></body></html>"),
    "/form": ("text/html", b"<html><head><title>Form</title></head><body><form action='/submit' method='post'>"
                           b"<label>Name <input name='name'></label><button type='submit'>Send it</button></form></body></html>"),
    "/download": ("text/html", b"<html><body><a href='/file.csv' download>Get the data</a></body></html>"),
    "/file.csv": ("text/csv", b"a,b\n1,2\n"),
    "/socket": ("text/html", b"<html><body><p>socket page</p><script>const ws = new WebSocket(new URLSearchParams(location.search).get('to') || '');"
                             b"ws.onopen = () => { document.body.dataset.ws = 'open'; };"
                             b"ws.onclose = () => { document.body.dataset.ws = document.body.dataset.ws || 'closed'; };</script></body></html>"),
    "/article": ("text/html", b"<html><head><title>Capture me</title></head><body><article><h1>Capture me</h1>"
                              b"<p>The lighthouse keeper counted 317 ships in the winter of that year, more than ever before.</p>"
                              b"<p>Most of them carried salt and timber between the northern ports.</p></article></body></html>"),
}


class Site(http.server.BaseHTTPRequestHandler):
    hits: list[str]
    redirect_to = ""

    def log_message(self, *args):
        pass

    def _send(self, status, ctype, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.hits.append(self.path)
        if self.path == "/hop":
            return self._send(302, "text/plain", b"", [("Location", "/hop2")])
        if self.path == "/hop2":
            return self._send(302, "text/plain", b"", [("Location", self.redirect_to)])
        if self.path.startswith("/cookie"):
            value = parse_qs(self.path.partition("?")[2]).get("set", [""])[0]
            headers = [("Set-Cookie", f"who={value}; Path=/")] if value else []
            return self._send(200, "text/html", f"<html><body><p id=c>cookie: {self.headers.get('Cookie') or 'none'}</p></body></html>".encode(), headers)
        path = self.path.partition("?")[0]
        ctype, body = PAGES.get(path, ("text/plain", b"not found"))
        extra = [("Content-Disposition", "attachment; filename=file.csv")] if path == "/file.csv" else []
        return self._send(200 if path in PAGES else 404, ctype, body, extra)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        name = form.get("name", ["?"])[0]
        self._send(200, "text/html", f"<html><head><title>Thanks</title></head><body><p>Thank you, {name}!</p></body></html>".encode())


def serve(host: str):
    handler = type("Handler", (Site,), {"hits": []})
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


@pytest.fixture(scope="module")
def site():
    server, handler = serve("127.0.0.1")
    private, private_handler = serve("127.0.0.2")
    handler.redirect_to = f"http://127.0.0.2:{private.server_port}/secret"
    yield f"http://127.0.0.1:{server.server_port}", handler, private_handler
    server.shutdown()
    private.shutdown()


def app(**browser):
    return AppConfig.model_validate({"browser": {"allowed_private_networks": ["127.0.0.1/32"], "live_view": False, **browser}})


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path))
    set_sandbox_provider(LocalSandboxProvider(SandboxConfig()))
    yield tmp_path
    reset_sandbox_provider()
    service = get_browser_service()
    service.run_sync(service.close_all)


async def call(tool, args, thread="t1", user="u1", run="r1"):
    config = {"configurable": {"thread_id": thread, "user_id": user, "run_id": run}}
    from langgraph.config import var_child_runnable_config

    token = var_child_runnable_config.set(config)
    try:
        msg = await tool.ainvoke({"name": tool.name, "args": args, "id": f"call-{uuid.uuid4().hex[:6]}", "type": "tool_call"}, config=config)
    finally:
        var_child_runnable_config.reset(token)
    assert isinstance(msg, ToolMessage)
    return msg


def ref_of(snapshot: str, label: str) -> str:
    for line in snapshot.splitlines():
        if label in line and "[ref=" in line:
            return line.split("[ref=", 1)[1].split("]", 1)[0]
    raise AssertionError(f"no element {label!r} in:\n{snapshot}")


async def test_a_javascript_page_reaches_the_model_and_a_form_is_filled_and_submitted(site):
    base, handler, _ = site
    cfg = app()
    msg = await call(BrowserNavigateTool.from_app_config(cfg), {"url": base + "/"})
    assert msg.status != "error", msg.content
    assert "Rendered by script: the answer is 42" in msg.content  # written by JavaScript, not in the HTML as served
    assert msg.artifact["screenshot"].startswith("/mnt/user-data/outputs/.browser-frames/")
    link = ref_of(msg.content, "Sign up")
    msg = await call(BrowserClickTool.from_app_config(cfg), {"ref": link})
    assert "Title: Form" in msg.content
    field = ref_of(msg.content, "textbox")
    msg = await call(BrowserTypeTool.from_app_config(cfg), {"ref": field, "text": "Ada Lovelace", "submit": True})
    assert "Thank you, Ada Lovelace!" in msg.content
    text = await call(BrowserGetTextTool.from_app_config(cfg), {})
    assert "Thank you, Ada Lovelace!" in text.content
    again = await call(BrowserSnapshotTool.from_app_config(cfg), {})
    assert "Title: Thanks" in again.content
    shot = await call(BrowserScreenshotTool.from_app_config(cfg), {"filename": "thanks"})
    png = thread_user_data_dir("u1", "t1") / "outputs" / "thanks.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "/mnt/user-data/outputs/thanks.png" in shot.content


async def test_a_redirect_to_a_private_address_is_refused_mid_chain(site):
    base, handler, private = site
    msg = await call(BrowserNavigateTool.from_app_config(app()), {"url": base + "/hop"})
    assert "SSRF guard refused" in msg.content and "127.0.0.2" in msg.content, msg.content
    assert "/hop2" in handler.hits  # the first hop was allowed and followed
    assert private.hits == []  # nothing reached the private server


async def test_a_private_address_is_refused_unless_allow_listed(site):
    base, _, private = site
    port = base.rsplit(":", 1)[1]
    blocked = await call(BrowserNavigateTool.from_app_config(AppConfig.model_validate({"browser": {"live_view": False}})),
                         {"url": base + "/"}, thread="t-closed")
    assert "SSRF guard refused" in blocked.content and "loopback" in blocked.content
    metadata = await call(BrowserNavigateTool.from_app_config(app(allowed_private_networks=["0.0.0.0/0"])),
                          {"url": "http://169.254.169.254/latest/meta-data/"}, thread="t-meta")
    assert "metadata" in metadata.content
    scheme = await call(BrowserNavigateTool.from_app_config(app()), {"url": "file:///etc/passwd"}, thread="t-file")
    assert scheme.status == "error" and "scheme is not allowed" in scheme.content
    assert port and private.hits == []


async def test_two_threads_cookies_never_mix(site):
    base, _, _ = site
    cfg = app()
    nav = BrowserNavigateTool.from_app_config(cfg)
    first = await call(nav, {"url": base + "/cookie?set=alice"}, thread="ta")
    assert "cookie: none" in first.content
    second = await call(nav, {"url": base + "/cookie?set=bob"}, thread="tb")
    assert "cookie: none" in second.content  # thread B does not see thread A's cookie
    again_a = await call(nav, {"url": base + "/cookie"}, thread="ta")
    again_b = await call(nav, {"url": base + "/cookie"}, thread="tb")
    assert "cookie: who=alice" in again_a.content and "bob" not in again_a.content
    assert "cookie: who=bob" in again_b.content and "alice" not in again_b.content


async def test_downloads_land_in_the_workspace(site):
    base, _, _ = site
    cfg = app()
    page = await call(BrowserNavigateTool.from_app_config(cfg), {"url": base + "/download"})
    msg = await call(BrowserClickTool.from_app_config(cfg), {"ref": ref_of(page.content, "Get the data")})
    saved = thread_user_data_dir("u1", "t1") / "workspace" / "downloads" / "file.csv"
    assert "Downloaded /mnt/user-data/workspace/downloads/file.csv" in msg.content
    assert saved.read_text() == "a,b\n1,2\n"


async def test_web_capture_saves_markdown_and_pdf(site):
    base, _, _ = site
    tool = WebCaptureTool.from_app_config(app())
    md = await call(tool, {"url": base + "/article", "filename": "lighthouse"})
    text = (thread_user_data_dir("u1", "t1") / "outputs" / "lighthouse.md").read_text()
    assert "317 ships" in text and text.startswith("# Capture me") and "lighthouse.md" in md.content
    await call(tool, {"url": base + "/article", "format": "pdf", "filename": "lighthouse"})
    assert (thread_user_data_dir("u1", "t1") / "outputs" / "lighthouse.pdf").read_bytes()[:5] == b"%PDF-"


async def test_max_sessions_queues_then_refuses_and_close_frees_a_slot(site):
    base, _, _ = site
    cfg = app(max_sessions=1, queue_timeout_seconds=1)
    nav = BrowserNavigateTool.from_app_config(cfg)
    assert "Welcome" in (await call(nav, {"url": base + "/"}, thread="q1")).content
    refused = await call(nav, {"url": base + "/"}, thread="q2")
    assert refused.status == "error" and "all 1 browser sessions" in refused.content
    # A waiting call gets the slot as soon as the first thread closes its browser.
    waiting = asyncio.ensure_future(call(WebCaptureTool.from_app_config(app(max_sessions=1, queue_timeout_seconds=60)),
                                         {"url": base + "/article"}, thread="q3"))
    closed = await call(BrowserCloseTool.from_app_config(cfg), {}, thread="q1")
    assert "Closed" in closed.content
    assert "Saved the markdown capture" in (await waiting).content


# -- in a real lead agent with the scripted model --------------------------------------------


def agent_config(base_extra: str = "") -> AppConfig:
    from harness.config import parse_config

    return parse_config(
        "config_version: 1\nmodels:\n  - name: m\n    use: langchain_openai:ChatOpenAI\n    model: m\n    base_url: http://127.0.0.1:9/v1\n"
        "    api_key: k\ntool_groups:\n  - name: browser\ntools:\n"
        + "".join(f"  - name: {n}\n    group: browser\n    use: deerflow.community.browser_automation.tools:{n}_tool\n"
                  for n in ("browser_navigate", "browser_click", "browser_get_text"))
        + "browser:\n  allowed_private_networks: ['127.0.0.1/32']\n  live_view: true\n" + base_extra)


async def test_the_model_reads_a_javascript_page_through_the_snapshot_and_the_browser_closes_with_the_run(site):
    from langgraph.checkpoint.memory import InMemorySaver

    from harness.agents.lead_agent import make_lead_agent
    from harness.testing import ScriptedChatModel
    from harness.testing.script import call as tool_call
    from harness.testing.script import tool_reply

    base, _, _ = site
    model = ScriptedChatModel(script=[tool_reply(tool_call("browser_navigate", url=base + "/")), "The answer is 42."])
    graph = make_lead_agent({"configurable": {"llm_retry_initial_delay": 0}}, model=model, app_config=agent_config(),
                            checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "agent-t", "user_id": "u1", "run_id": "run-a"}}
    frames = []
    async for mode, chunk in graph.astream({"messages": [{"role": "user", "content": "what does the page say?"}]}, config,
                                           stream_mode=["custom", "values"]):
        if mode == "custom":
            frames.append(chunk)
    seen = "\n".join(str(m.content) for m in model.requests[1].messages)
    assert "Rendered by script: the answer is 42" in seen  # the tool result the model was given
    assert any(f["type"] == "browser_frame" and f["final"] and f["image"].startswith("data:image/jpeg;base64,") for f in frames)
    assert {"type": "browser_closed"} in frames  # the run ended: its browser is gone
    service = get_browser_service()
    assert not service.has_session("u1", "agent-t")


async def test_a_page_that_never_loads_is_a_tool_error_and_the_session_goes_on(site):
    base, _, _ = site
    hold = threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            hold.wait(60)

    slow = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    try:
        nav = BrowserNavigateTool.from_app_config(app(page_load_timeout_ms=1500))
        msg = await call(nav, {"url": f"http://127.0.0.1:{slow.server_port}/"})
        assert msg.content.startswith("Error: could not open") and "Timeout" in msg.content
        assert "Welcome" in (await call(nav, {"url": base + "/"})).content
    finally:
        hold.set()
        slow.shutdown()


def chromium_pids_of(proxy_port: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if f"--proxy-server=http://127.0.0.1:{proxy_port}" in cmdline:
                pids.append(int(entry))
    return pids


@pytest.mark.parametrize("noticed", ["before the next call", "during the next call"])
async def test_a_crashed_browser_is_a_tool_error_and_the_next_call_starts_a_fresh_one(site, noticed):
    import signal

    base, _, _ = site
    nav = BrowserNavigateTool.from_app_config(app())
    await call(nav, {"url": base + "/cookie?set=before-crash"}, thread="crash")
    service = get_browser_service()
    session = service._sessions[("u1", "crash")]
    pids = chromium_pids_of(session.proxy.port)
    assert pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if noticed == "before the next call":  # a busy machine: Playwright has already seen the death
        deadline = asyncio.get_running_loop().time() + HANG_SECONDS
        while not session.crashed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert session.crashed
    failed = await call(BrowserGetTextTool.from_app_config(app()), {}, thread="crash")
    assert failed.status == "error" and "crashed" in failed.content
    fresh = await call(nav, {"url": base + "/cookie"}, thread="crash")
    assert "cookie: none" in fresh.content  # a new browser, with nothing of the old one


async def test_a_run_gets_only_its_browser_time(site):
    base, _, _ = site
    nav = BrowserNavigateTool.from_app_config(app(max_seconds_per_run=0.01))
    await call(nav, {"url": base + "/"}, thread="timed", run="run-1")
    spent = await call(nav, {"url": base + "/"}, thread="timed", run="run-1")
    assert spent.status == "error" and "browser.max_seconds_per_run" in spent.content
    # a new run of the thread starts a fresh browser with its own time
    assert "Welcome" in (await call(nav, {"url": base + "/"}, thread="timed", run="run-2")).content


async def test_without_chromium_the_tool_says_what_the_operator_must_do(site):
    base, _, _ = site
    msg = await call(BrowserNavigateTool.from_app_config(app(executable_path="/nonexistent/chromium")), {"url": base + "/"}, thread="none")
    assert msg.status == "error" and "no browser at /nonexistent/chromium" in msg.content and "apt-get install chromium" in msg.content


async def test_a_websocket_to_a_private_address_is_refused(site):
    import socket

    base, _, _ = site
    listener = socket.socket()
    listener.bind(("127.0.0.2", 0))
    listener.listen(5)
    listener.setblocking(False)
    target = f"ws://127.0.0.2:{listener.getsockname()[1]}/"
    try:
        opened = await call(BrowserNavigateTool.from_app_config(app()), {"url": f"{base}/socket?to={target}"}, thread="ws")
        service = get_browser_service()
        session = service._sessions[("u1", "ws")]
        await service.run(lambda: session.page.wait_for_function("document.body.dataset.ws !== undefined"))
        assert await service.run(lambda: session.page.evaluate("document.body.dataset.ws")) == "closed"
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected to the private address
        # The refusal is told in the step during which it happened: the page's load or the next look.
        note = await call(BrowserSnapshotTool.from_app_config(app()), {}, thread="ws")
        told = opened.content + note.content
        assert told.count("SSRF guard refused 1 request(s)") == 1 and f"127.0.0.2:{listener.getsockname()[1]}" in told
    finally:
        listener.close()


async def test_an_idle_browser_is_closed(site):
    base, _, _ = site
    await call(BrowserNavigateTool.from_app_config(app(idle_timeout_seconds=0.5)), {"url": base + "/"}, thread="idle")
    service = get_browser_service()
    # Wait on the session to go, bounded so a broken reaper fails rather than hangs.
    for _ in range(600):
        if not service.has_session("u1", "idle"):
            break
        await asyncio.sleep(0.1)
    assert not service.has_session("u1", "idle")


async def test_a_reference_not_on_the_page_is_an_error_at_once(site):
    base, _, _ = site
    cfg = app(page_load_timeout_ms=600000)  # a wait for the element would outlast the test's patience
    await call(BrowserNavigateTool.from_app_config(cfg), {"url": base + "/"}, thread="refs")
    for tool, args in ((BrowserClickTool, {"ref": "e999"}), (BrowserTypeTool, {"ref": 999, "text": "x"})):
        msg = await asyncio.wait_for(call(tool.from_app_config(cfg), args, thread="refs"), timeout=120)
        assert msg.status == "error" and "no element [ref=" in msg.content and "browser_snapshot" in msg.content
