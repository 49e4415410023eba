"""Web tool cards in a real browser: the search card lists its results as links, the
fetch card shows the page title, and the answer that cites a page gets a Sources list;
at desktop width and on a 375 px phone. The web is the local fake (SearXNG protocol)."""

from __future__ import annotations

import pytest
import yaml
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.support.fake_web import FakeWeb
from tests.ui.test_chat import assistant, send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def web_live(live):
    """The live server's config plus the web tools, pointed at a fake web on loopback."""
    original = live.config_path.read_text()
    with FakeWeb() as web:
        config = yaml.safe_load(original)
        config["tool_groups"] = [{"name": "web"}]
        config["tools"] = [
            {"name": "web_search", "group": "web", "use": "harness.tools.web:WebSearchTool", "provider": "searxng"},
            {"name": "web_fetch", "group": "web", "use": "harness.tools.web:WebFetchTool"},
            {"name": "image_search", "group": "web", "use": "harness.tools.web:ImageSearchTool", "provider": "searxng"},
        ]
        config["web"] = {"allowed_private_networks": ["127.0.0.0/8"], "timeout_seconds": 10,
                         "providers": {"searxng": {"base_url": f"{web.base}/searxng"}}}
        live.config_path.write_text(yaml.safe_dump(config))
        try:
            yield web
        finally:
            live.config_path.write_text(original)


def research_script(script, web, *, images=False):
    article = f"{web.base}/article"
    script(
        tool_reply(call("web_search", query="lisbon rainfall"), text="Searching the web."),
        tool_reply(call("web_fetch", url=article)),
        *([tool_reply(call("image_search", query="lisbon tram"))] if images else []),
        Reply(text=f"Lisbon gets about **750 mm** of rain a year, most of it from October to April ([Rainfall in Lisbon]({article}))."),
    )
    return article


def check_research(page, article):
    search = page.locator('.tool-card[data-tool="web_search"]')
    fetch = page.locator('.tool-card[data-tool="web_fetch"]')
    expect(search).to_have_attribute("data-status", "success")
    expect(fetch).to_have_attribute("data-status", "success")
    expect(search.locator(".tool-args-summary")).to_have_text("lisbon rainfall")
    expect(fetch.locator(".tool-args-summary")).to_have_text(article)
    expect(search.locator(".web-headline")).to_have_text("3 results")
    expect(fetch.locator(".web-headline")).to_have_text("Rainfall in Lisbon")
    answer = assistant(page).last
    expect(answer).to_contain_text("750 mm")
    sources = answer.get_by_role("navigation", name="Sources")
    expect(sources.get_by_role("link", name="Rainfall in Lisbon")).to_have_attribute("href", article)
    # only what the answer cites is listed, not every search result
    expect(sources.get_by_role("listitem")).to_have_count(1)
    return search, fetch, sources


def test_web_cards_and_sources_at_desktop_width(page, script, web_live, doc_shot):
    article = research_script(script, web_live, images=True)
    page.goto("/")
    send(page, "Search the web for Lisbon rainfall and summarise")
    search, fetch, _ = check_research(page, article)
    search.locator(":scope > summary").click()
    results = search.locator(".web-results .web-result-title")
    expect(results).to_have_count(3)
    expect(results.first).to_have_attribute("href", article)
    expect(results.first).to_have_attribute("target", "_blank")
    expect(results.nth(1)).to_have_text("Portugal climate")
    # a forged context tag in a snippet shows as text, never as markup
    expect(search.locator(".web-snippet").nth(2)).to_contain_text("<deerflow-context")
    # the text the model read is one click away
    raw = search.locator(".web-raw")
    expect(raw.locator(".tool-result")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator(".tool-result")).to_contain_text("Untrusted web content")
    raw.locator("summary").click()
    fetch.locator(":scope > summary").click()
    expect(fetch.locator(".web-page .web-result-title")).to_have_attribute("href", article)
    expect(fetch.locator(".web-page")).to_contain_text("html")
    fetch.locator(":scope > summary").click()
    images = page.locator('.tool-card[data-tool="image_search"]')
    expect(images.locator(".web-headline")).to_have_text("1 image")
    images.locator(":scope > summary").click()
    expect(images.locator(".web-result-title")).to_have_attribute("href", "https://img.example.org/tram.jpg")
    expect(images.locator(".web-result")).to_contain_text("1600×1200")
    expect(images.locator(".web-source a")).to_have_attribute("href", "https://example.org/photos/tram")
    expect(images.locator("img")).to_have_count(0)  # links only: showing results never loads remote images
    images.locator(":scope > summary").click()
    assert page.js_errors == []
    assistant(page).last.scroll_into_view_if_needed()
    doc_shot(page, "web-research")


def test_web_cards_and_sources_on_a_phone(phone, script, web_live, doc_shot):
    page = phone
    article = research_script(script, web_live)
    page.goto("/")
    send(page, "Search the web for Lisbon rainfall")
    search, _, sources = check_research(page, article)
    search.locator(":scope > summary").click()
    expect(search.locator(".web-result-title").first).to_be_visible()
    expect(sources).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert page.js_errors == []
    doc_shot(page, "web-research-phone")


def test_a_reloaded_thread_keeps_the_cards_and_sources(page, script, web_live):
    article = research_script(script, web_live)
    page.goto("/")
    send(page, "Search the web for Lisbon rainfall")
    check_research(page, article)
    page.reload()
    check_research(page, article)
