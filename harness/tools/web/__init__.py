"""Web research tools: ``web_search``, ``web_fetch`` and ``image_search`` (config entries
with ``use: harness.tools.web:WebSearchTool`` and so on; see docs/tools.md)."""

from harness.tools.web.tools import ImageSearchTool, WebFetchTool, WebSearchTool, check_web_tools

__all__ = ["ImageSearchTool", "WebFetchTool", "WebSearchTool", "check_web_tools"]
