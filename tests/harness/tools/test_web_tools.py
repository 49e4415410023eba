"""web_fetch, web_search and image_search against the local fake web: extraction,
content types, bad input, providers speaking their real protocols, fallback, the
per-run cache and a provider without its key."""

import json
import logging

import pytest
from langchain_core.messages import ToolMessage

from harness.config import parse_config
from harness.config.app_config import AppConfig
from harness.tools.registry import get_available_tools
from harness.tools.web import ImageSearchTool, WebFetchTool, WebSearchTool, check_web_tools
from harness.tools.web.tools import RUN_CACHE

LOOPBACK_WEB = {"allowed_private_networks": ["127.0.0.0/8", "::1/128"], "timeout_seconds": 5}


def app_with(web=None, tools=()):
    return AppConfig.model_validate({"web": {**LOOPBACK_WEB, **(web or {})}, "tool_groups": [{"name": "web"}], "tools": list(tools)})


async def run_tool(tool, args, run_id="run-1"):
    """Invoke as the agent's tool node does: a tool call in, a ToolMessage out."""
    call = {"name": tool.name, "args": args, "id": "call-1", "type": "tool_call"}
    config = {"configurable": {"run_id": run_id}} if run_id else {}
    from langgraph.config import var_child_runnable_config

    token = var_child_runnable_config.set(config)
    try:
        msg = await tool.ainvoke(call, config=config)
    finally:
        var_child_runnable_config.reset(token)
    assert isinstance(msg, ToolMessage)
    return msg


@pytest.fixture(autouse=True)
def fresh_cache():
    RUN_CACHE.clear()


# ---------------------------------------------------------------- web_fetch


async def test_fetch_keeps_the_article_and_drops_the_boilerplate(fake_web):
    msg = await run_tool(WebFetchTool.from_app_config(app_with()), {"url": f"{fake_web.base}/article"})
    assert msg.status != "error"
    text = msg.content
    assert "Title: Rainfall in Lisbon\n" in text
    assert "750 millimetres" in text and "reservoirs north of the Tagus" in text
    for junk in ("NAVIGATION-BOILERPLATE", "COOKIE-BOILERPLATE", "FOOTER-BOILERPLATE"):
        assert junk not in text
    assert "Untrusted web content" in text
    assert msg.artifact["title"] == "Rainfall in Lisbon"
    assert msg.artifact["final_url"] == f"{fake_web.base}/article"
    assert msg.artifact["fetched_at"].endswith("+00:00")


async def test_fetch_reports_the_final_url_after_redirects(fake_web):
    msg = await run_tool(WebFetchTool.from_app_config(app_with()), {"url": f"{fake_web.base}/redirect"})
    assert f"URL: {fake_web.base}/article" in msg.content
    assert f"Requested URL: {fake_web.base}/redirect" in msg.content
    assert msg.artifact["final_url"] == f"{fake_web.base}/article"


async def test_fetch_reads_a_pdf_through_markitdown(fake_web):
    msg = await run_tool(WebFetchTool.from_app_config(app_with()), {"url": f"{fake_web.base}/report.pdf"})
    assert msg.status != "error", msg.content
    assert "Quarterly rainfall report for Lisbon" in msg.content
    assert msg.artifact["content_type"] == "pdf"


@pytest.mark.parametrize("path,expected", [("/plain.txt", "Plain text: ünïcode ok."), ("/data.json", '"rain_mm": 750')])
async def test_fetch_text_and_json(fake_web, path, expected):
    msg = await run_tool(WebFetchTool.from_app_config(app_with()), {"url": fake_web.base + path})
    assert expected in msg.content


async def test_fetch_cuts_long_pages_and_marks_the_cut(fake_web):
    msg = await run_tool(WebFetchTool.from_app_config(app_with(), max_chars=500), {"url": f"{fake_web.base}/article"})
    body = msg.content.split("\n\n", 1)[1]
    assert "[... truncated: showing" in body
    assert len(body) < 650
    assert "Lisbon receives" in body  # the head is what is kept
    assert msg.artifact["truncated"] is True


@pytest.mark.parametrize("path,error", [
    ("/missing", "answered HTTP 404"),
    ("/image.png", "unsupported content type image/png"),
    ("/bad-utf8", "not valid utf-8 text"),
    ("/redirect-metadata", "169.254.169.254 is a cloud metadata address"),
    ("/redirect-file", "scheme"),
    ("/huge", "byte limit"),
    ("/huge-declared", "2,147,483,648 bytes"),
    ("/loop/0", "more than 5 redirects"),
])
async def test_fetch_bad_input_is_a_short_specific_error(fake_web, path, error):
    tool = WebFetchTool.from_app_config(app_with({"max_response_bytes": 1024 * 1024}))
    msg = await run_tool(tool, {"url": fake_web.base + path})
    assert msg.status == "error"
    assert msg.content.startswith("Error: web_fetch")
    assert error in msg.content
    assert len(msg.content) < 400


async def test_fetch_of_a_page_that_never_ends_times_out(fake_web):
    tool = WebFetchTool.from_app_config(app_with({"timeout_seconds": 1}))
    msg = await run_tool(tool, {"url": f"{fake_web.base}/never-ends"})
    assert msg.status == "error" and "no complete response within 1 seconds" in msg.content


@pytest.mark.parametrize("url,error", [
    ("file:///etc/passwd", "file:// scheme is not allowed"),
    ("gopher://127.0.0.1:70/_x", "gopher:// scheme is not allowed"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://[::ffff:192.168.0.1]/", "private address"),
])
async def test_fetch_refuses_private_and_odd_urls_without_the_allow_list(url, error):
    tool = WebFetchTool.from_app_config(AppConfig())
    msg = await run_tool(tool, {"url": url})
    assert msg.status == "error" and error in msg.content and "refused" in msg.content


async def test_loopback_server_needs_the_allow_list(fake_web):
    msg = await run_tool(WebFetchTool.from_app_config(AppConfig()), {"url": f"{fake_web.base}/article"})
    assert msg.status == "error" and "loopback" in msg.content
    assert fake_web.requests == []


async def test_same_url_twice_in_a_run_is_one_request(fake_web):
    tool = WebFetchTool.from_app_config(app_with())
    first = await run_tool(tool, {"url": f"{fake_web.base}/article"}, run_id="run-a")
    second = await run_tool(tool, {"url": f"{fake_web.base}/article", "max_chars": 800}, run_id="run-a")
    assert fake_web.hits("/article") == 1
    assert "750 millimetres" in first.content and "750 millimetres" in second.content
    await run_tool(tool, {"url": f"{fake_web.base}/article"}, run_id="run-b")
    assert fake_web.hits("/article") == 2  # another run fetches afresh


async def test_failures_are_not_cached(fake_web):
    tool = WebFetchTool.from_app_config(app_with())
    await run_tool(tool, {"url": f"{fake_web.base}/missing"}, run_id="run-a")
    await run_tool(tool, {"url": f"{fake_web.base}/missing"}, run_id="run-a")
    assert fake_web.hits("/missing") == 2


# ---------------------------------------------------------------- providers


def searxng_web(fake_web, **extra):
    return app_with({"providers": {"searxng": {"base_url": f"{fake_web.base}/searxng", **extra},
                                   "tavily": {"base_url": f"{fake_web.base}/tavily", "api_key": fake_web.tavily_key}}})


async def test_searxng_search_speaks_its_json_api(fake_web):
    tool = WebSearchTool.from_app_config(searxng_web(fake_web), provider="searxng")
    msg = await run_tool(tool, {"query": "lisbon rainfall", "time_range": "year", "max_results": 1})
    request = fake_web.requests[-1]
    assert request["path"] == "/searxng/search"
    assert request["query"]["format"] == ["json"] and request["query"]["q"] == ["lisbon rainfall"]
    assert request["query"]["time_range"] == ["year"]
    assert msg.artifact["results"] == [{"title": "Rainfall in Lisbon", "url": f"{fake_web.base}/article",
                                        "snippet": "Lisbon receives about 750 mm of rain a year.", "date": "2026-03-01T00:00:00"}]
    assert "1. Rainfall in Lisbon" in msg.content and f"URL: {fake_web.base}/article" in msg.content
    assert "2." not in msg.content


async def test_tavily_search_sends_the_key_and_parses_results(fake_web):
    tool = WebSearchTool.from_app_config(searxng_web(fake_web), provider="tavily")
    msg = await run_tool(tool, {"query": "lisbon rainfall", "time_range": "month"})
    request = fake_web.requests[-1]
    assert request["headers"]["Authorization"] == f"Bearer {fake_web.tavily_key}"
    body = json.loads(request["body"])
    assert body["query"] == "lisbon rainfall" and body["max_results"] == 5 and body["time_range"] == "month"
    assert [r["url"] for r in msg.artifact["results"]] == [f"{fake_web.base}/article", f"{fake_web.base}/report.pdf"]
    assert msg.artifact["provider"] == "tavily"


async def test_provider_errors_name_the_provider_and_cause(fake_web):
    app = app_with({"providers": {"tavily": {"base_url": f"{fake_web.base}/tavily", "api_key": "wrong"}}})
    msg = await run_tool(WebSearchTool.from_app_config(app, provider="tavily"), {"query": "x"})
    assert msg.status == "error"
    assert "tavily: the API key was refused (HTTP 401): Unauthorized: missing or invalid API key." in msg.content
    fake_web.tavily_status = 429
    msg = await run_tool(WebSearchTool.from_app_config(app, provider="tavily"), {"query": "y"})
    assert "tavily: rate limited (HTTP 429)" in msg.content


async def test_fallback_tries_the_next_provider(fake_web):
    fake_web.tavily_status = 429
    tool = WebSearchTool.from_app_config(searxng_web(fake_web), provider="tavily", fallback=["searxng"])
    msg = await run_tool(tool, {"query": "lisbon"})
    assert msg.status != "error"
    assert msg.artifact["provider"] == "searxng"
    assert "tavily: rate limited" in msg.content  # the model is told why the first one failed


async def test_provider_timeout_is_a_clear_error(fake_web):
    app = app_with({"providers": {"searxng": {"base_url": f"{fake_web.base}/never-ends?", "timeout": 1}}})
    msg = await run_tool(WebSearchTool.from_app_config(app, provider="searxng"), {"query": "x"})
    assert msg.status == "error" and "searxng: timed out after 1 s" in msg.content


async def test_searxng_image_search(fake_web):
    tool = ImageSearchTool.from_app_config(searxng_web(fake_web), provider="searxng")
    msg = await run_tool(tool, {"query": "lisbon tram"})
    assert fake_web.requests[-1]["query"]["categories"] == ["images"]
    assert msg.artifact["results"] == [{"title": "lisbon tram photo", "image_url": "https://img.example.org/tram.jpg",
                                        "source_url": "https://example.org/photos/tram",
                                        "thumbnail_url": "https://img.example.org/tram-thumb.jpg", "width": 1600, "height": 1200}]
    assert "(1600x1200)" in msg.content and "Source page: https://example.org/photos/tram" in msg.content


async def test_search_cache_per_run(fake_web):
    tool = WebSearchTool.from_app_config(searxng_web(fake_web), provider="searxng")
    await run_tool(tool, {"query": "lisbon"}, run_id="r1")
    await run_tool(tool, {"query": "lisbon"}, run_id="r1")
    assert fake_web.hits("/searxng/search") == 1


async def test_empty_query_is_refused():
    msg = await run_tool(WebSearchTool.from_app_config(app_with()), {"query": "   "})
    assert msg.status == "error" and "non-empty query" in msg.content


# ---------------------------------------------------------------- configuration


def test_missing_key_makes_the_tool_unavailable_not_a_crash(caplog, monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    app = parse_config(
        "tool_groups: [{name: web}]\n"
        "tools:\n"
        "  - {name: web_search, group: web, use: 'harness.tools.web:WebSearchTool', provider: brave}\n"
        "  - {name: web_fetch, group: web, use: 'harness.tools.web:WebFetchTool'}\n"
        "web:\n  providers:\n    tavily: {api_key: $TAVILY_API_KEY}\n"
    )
    assert "TAVILY_API_KEY is not set" in app.web.providers["tavily"]["unavailable_reason"]
    with caplog.at_level(logging.WARNING):
        problems = check_web_tools(app)
    assert problems == ["tool 'web_search' is unavailable: brave: no API key: set BRAVE_API_KEY or web.providers.brave.api_key"]
    assert "web_search is unavailable" in caplog.text
    tools = {t.name: t for t in get_available_tools(config=app, include_sandbox=False, include_builtins=False)}
    assert tools["web_search"].description.startswith("(Unavailable: brave: no API key")
    assert tools["web_fetch"].unavailable_reason is None


async def test_unavailable_tool_answers_with_the_reason(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    tool = WebSearchTool.from_app_config(AppConfig(), provider="tavily")
    msg = await run_tool(tool, {"query": "x"})
    assert msg.status == "error" and "not available on this server (tavily: no API key" in msg.content


def test_a_key_from_the_environment_is_used(monkeypatch):
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    tool = WebSearchTool.from_app_config(AppConfig(), provider="tavily")
    assert tool.unavailable_reason is None


def test_unknown_provider_and_bad_network_are_config_errors():
    from harness.config import ConfigError

    with pytest.raises(ConfigError, match="unknown web provider"):
        parse_config("web:\n  providers:\n    bing: {}\n")
    with pytest.raises(ConfigError, match="not an IP network"):
        parse_config("web:\n  allowed_private_networks: [intranet]\n")
    with pytest.raises(ValueError, match="unknown web provider 'bing'"):
        WebSearchTool.from_app_config(AppConfig(), provider="bing")


# ---------------------------------------------------------------- ddgs


def test_ddgs_engine_through_its_own_client_against_a_local_stand_in(fake_web):
    """ddgs has no base-URL option, but its engine objects keep the URL they post to: the
    real engine (its HTTP client and HTML parser) runs against the stand-in, and our
    provider's parsing turns its rows into results."""
    from dataclasses import asdict

    from ddgs.engines.duckduckgo import Duckduckgo

    from harness.tools.web.providers import parse_ddgs_text

    engine = Duckduckgo(timeout=5)
    engine.search_url = f"{fake_web.base}/ddg/html/"
    rows = [asdict(r) for r in engine.search("lisbon rainfall")]
    assert fake_web.requests[-1]["body"] and b"q=lisbon+rainfall" in fake_web.requests[-1]["body"]
    results = parse_ddgs_text(rows)
    assert [(r.title, r.url) for r in results] == [("Rainfall in Lisbon", f"{fake_web.base}/article"),
                                                   ("Portugal climate", "https://example.org/climate")]
    assert results[0].snippet == "Lisbon receives about 750 millimetres of rain a year."


def test_ddgs_rows_become_results():
    from harness.tools.web.providers import parse_ddgs_images, parse_ddgs_text

    text = parse_ddgs_text([{"title": "A", "href": "https://a.example/", "body": "about a"},
                            {"title": "no link", "href": ""}, {"title": "N", "href": "https://n.example/", "body": "", "date": "2026-01-02"}])
    assert [(r.title, r.url, r.snippet, r.date) for r in text] == [("A", "https://a.example/", "about a", None),
                                                                     ("N", "https://n.example/", "", "2026-01-02")]
    images = parse_ddgs_images([{"title": "Tram", "image": "https://i.example/t.jpg", "thumbnail": "https://i.example/t_s.jpg",
                                 "url": "https://p.example/tram", "height": 768, "width": "1024", "source": "Bing"},
                                {"title": "broken", "image": None}])
    assert [r.as_dict() for r in images] == [{"title": "Tram", "image_url": "https://i.example/t.jpg", "source_url": "https://p.example/tram",
                                               "thumbnail_url": "https://i.example/t_s.jpg", "width": 1024, "height": 768}]


async def test_ddgs_failure_is_a_provider_error_naming_ddgs():
    # a proxy that refuses connections stands in for an unreachable DuckDuckGo
    tool = WebSearchTool.from_app_config(AppConfig.model_validate({"web": {"providers": {"ddgs": {"proxy": "http://127.0.0.1:9", "timeout": 2}}}}))
    msg = await run_tool(tool, {"query": "lisbon"})
    assert msg.status == "error" and msg.content.startswith("Error: web_search failed: ddgs: ")


def test_fetch_provider_without_key_falls_back_to_direct(monkeypatch, caplog):
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    with caplog.at_level(logging.WARNING):
        tool = WebFetchTool.from_app_config(AppConfig(), provider="jina", fallback=["direct"])
    assert tool.unavailable_reason is None and not tool.description.startswith("(Unavailable")
    assert "skipping unavailable provider(s): jina: no API key" in caplog.text


# ---------------------------------------------------------------- the other providers


def keyed_web(fake_web):
    return app_with({"providers": {
        "brave": {"base_url": f"{fake_web.base}/brave", "api_key": "brave-key"},
        "jina": {"base_url": f"{fake_web.base}/jina", "api_key": "jina-key", "reader_url": f"{fake_web.base}/jina-reader"},
        "firecrawl": {"base_url": f"{fake_web.base}/firecrawl", "api_key": "fc-key"},
        "tavily": {"base_url": f"{fake_web.base}/tavily", "api_key": fake_web.tavily_key},
    }})


@pytest.mark.parametrize("provider,path", [("brave", "/brave/res/v1/web/search"), ("jina", "/jina/"), ("firecrawl", "/firecrawl/v2/search")])
async def test_keyed_search_providers(fake_web, provider, path):
    msg = await run_tool(WebSearchTool.from_app_config(keyed_web(fake_web), provider=provider), {"query": "lisbon rain", "time_range": "week"})
    assert msg.status != "error", msg.content
    assert fake_web.requests[-1]["path"] == path
    assert msg.artifact["results"][0]["url"] == f"{fake_web.base}/article"
    assert msg.artifact["results"][0]["title"] == "Rainfall in Lisbon"


@pytest.mark.parametrize("provider", ["brave", "jina", "firecrawl"])
async def test_keyed_providers_report_a_refused_key(fake_web, provider):
    app = keyed_web(fake_web)
    app.web.providers[provider]["api_key"] = "wrong"
    msg = await run_tool(WebSearchTool.from_app_config(app, provider=provider), {"query": "x"})
    assert msg.status == "error" and f"{provider}: the API key was refused (HTTP 401)" in msg.content


async def test_brave_image_search(fake_web):
    msg = await run_tool(ImageSearchTool.from_app_config(keyed_web(fake_web), provider="brave"), {"query": "tram"})
    assert msg.artifact["results"][0] == {"title": "Tram 28", "image_url": "https://example.org/tram.jpg", "source_url": "https://example.org/tram",
                                          "thumbnail_url": "https://imgs.search.brave.com/t.jpg", "width": 800, "height": 600}


@pytest.mark.parametrize("provider", ["jina", "firecrawl", "tavily"])
async def test_fetch_through_an_extraction_provider(fake_web, provider):
    target = f"{fake_web.base}/article"
    msg = await run_tool(WebFetchTool.from_app_config(keyed_web(fake_web), provider=provider), {"url": target})
    assert msg.status != "error", msg.content
    assert "750 m" in msg.content and msg.artifact["final_url"] == target
    assert fake_web.hits("/article") == 0  # the provider fetched it, not us


async def test_extraction_providers_are_not_sent_private_urls(fake_web):
    """A self-hosted extraction service inside the network would fetch what it is given."""
    app = keyed_web(fake_web)
    tool = WebFetchTool.from_app_config(app, provider="firecrawl")
    msg = await run_tool(tool, {"url": "http://10.1.2.3/admin"})
    assert msg.status == "error" and "10.1.2.3 is a private address" in msg.content
    assert not any(r["path"].startswith("/firecrawl") for r in fake_web.requests)


async def test_fetch_provider_failure_falls_back_to_direct(fake_web):
    app = keyed_web(fake_web)
    app.web.providers["firecrawl"]["api_key"] = "wrong"
    msg = await run_tool(WebFetchTool.from_app_config(app, provider="firecrawl", fallback=["direct"]), {"url": f"{fake_web.base}/article"})
    assert msg.status != "error" and "750 millimetres" in msg.content


def test_the_prompt_asks_for_cited_sources_only_when_web_tools_are_there():
    from harness.agents.lead_agent.prompt import build_system_prompt

    assert "[title](url)" in build_system_prompt(tool_names=["bash", "web_search", "web_fetch"])
    assert "Research on the web" not in build_system_prompt(tool_names=["bash"])


def test_the_run_cache_is_bounded():
    from harness.tools.web.tools import RunCache

    cache = RunCache(max_runs=2, max_entries=2, max_chars=100)
    for i in range(3):
        cache.put("a", ("k", i), i, size=5)
    assert cache.get("a", ("k", 0)) is None and cache.get("a", ("k", 2)) == 2
    cache.put("b", ("k",), "b", size=20)
    cache.put("c", ("k",), "c", size=20)
    assert cache.get("a", ("k", 2)) is None  # oldest run dropped
    cache.put("c", ("big",), "x", size=90)  # over a quarter of the budget: not kept
    assert cache.get("c", ("big",)) is None
    cache.put("c", ("mid",), "m", size=24)
    cache.put("d", ("mid",), "m", size=24)
    cache.put("e", ("mid",), "m", size=24)
    assert cache._chars <= 100


def test_the_example_config_gives_a_fresh_install_all_three_web_tools_without_keys(monkeypatch):
    from pathlib import Path

    for var in ("TAVILY_API_KEY", "BRAVE_API_KEY", "JINA_API_KEY", "FIRECRAWL_API_KEY", "SEARXNG_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    app = parse_config((Path(__file__).resolve().parents[3] / "config.example.yaml").read_text())
    tools = {t.name: t for t in get_available_tools(config=app, include_sandbox=False, include_builtins=False)}
    assert set(tools) == {"web_search", "web_fetch", "image_search"}
    assert all(t.unavailable_reason is None for t in tools.values())
    assert check_web_tools(app) == []
    assert app.web.allowed_private_networks == []  # the guard is closed by default
