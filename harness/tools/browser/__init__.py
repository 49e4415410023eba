"""The agent's live browser: DeerFlow's browser tools and web_capture (tools.py), per-thread
Chromium sessions (session.py) and the proxy that puts the browser behind the SSRF guard
(proxy.py)."""

from harness.tools.browser.tools import (BROWSER_TOOL_NAMES, BrowserBackTool, BrowserClickTool, BrowserCloseTool,
                                         BrowserGetTextTool, BrowserNavigateTool, BrowserScreenshotTool, BrowserSnapshotTool,
                                         BrowserTypeTool, WebCaptureTool, close_thread_session, uses_browser)

__all__ = ["BROWSER_TOOL_NAMES", "BrowserBackTool", "BrowserClickTool", "BrowserCloseTool", "BrowserGetTextTool",
           "BrowserNavigateTool", "BrowserScreenshotTool", "BrowserSnapshotTool", "BrowserTypeTool", "WebCaptureTool",
           "close_thread_session", "uses_browser"]
