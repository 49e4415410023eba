"""Search and image-search providers behind one interface.

Each provider turns a query into :class:`SearchResult` / :class:`ImageResult` rows and
reports failure as :class:`ProviderError` naming itself and the cause (timeout, rate
limit, refused key), so the tool can say what went wrong or try the next provider. HTTP
providers go through the SSRF guard like every other outbound request; ``ddgs`` talks to
its fixed public engines through its own client (``proxy`` routes it elsewhere).

Keys come from ``web.providers.<name>`` in config.yaml, else from the provider's
environment variable; a provider without a required key is *unavailable*, with the
reason, instead of failing the whole tool set.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from harness.net import FetchTimeout, GuardError, GuardPolicy, guarded_fetch

logger = logging.getLogger(__name__)

TIME_RANGES = ("day", "week", "month", "year")


@dataclass
class SearchResult:
    title: str
    url: str
    snippet: str = ""
    date: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ImageResult:
    title: str
    image_url: str
    source_url: str = ""
    thumbnail_url: str = ""
    width: int | None = None
    height: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProviderError(Exception):
    def __init__(self, provider: str, cause: str) -> None:
        super().__init__(f"{provider}: {cause}")
        self.provider = provider
        self.cause = cause


@dataclass(frozen=True)
class HttpSettings:
    """The part of the ``web:`` section every provider request uses."""

    policy: GuardPolicy = GuardPolicy()
    timeout: float = 20.0
    max_bytes: int = 10 * 1024 * 1024
    user_agent: str = "DeerFlow/1.0"


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Provider:
    name: ClassVar[str]
    key_env: ClassVar[str | None] = None  # environment variable holding the API key
    key_required: ClassVar[bool] = True
    base_url_env: ClassVar[str | None] = None
    default_base_url: ClassVar[str] = ""
    supports_images: ClassVar[bool] = False

    def __init__(self, settings: Mapping[str, Any] | None = None, http: HttpSettings | None = None) -> None:
        settings = dict(settings or {})
        self.http = http or HttpSettings()
        self.unavailable_reason: str | None = settings.pop("unavailable_reason", None)
        self.api_key = settings.pop("api_key", None) or (os.environ.get(self.key_env) if self.key_env else None) or None
        env_base = os.environ.get(self.base_url_env) if self.base_url_env else None
        self.base_url = str(settings.pop("base_url", None) or env_base or self.default_base_url).rstrip("/")
        self.timeout = float(settings.pop("timeout", None) or self.http.timeout)
        self.options = settings
        if self.unavailable_reason is None and self.key_env and self.key_required and not self.api_key:
            self.unavailable_reason = f"no API key: set {self.key_env} or web.providers.{self.name}.api_key"
        if self.unavailable_reason is None and not self.base_url:
            self.unavailable_reason = f"no base URL: set web.providers.{self.name}.base_url" + (
                f" or {self.base_url_env}" if self.base_url_env else "")

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        raise ProviderError(self.name, "does not support web search")

    async def images(self, query: str, *, max_results: int) -> list[ImageResult]:
        raise ProviderError(self.name, "does not support image search")

    async def request_json(self, method: str, path: str, *, headers: Mapping[str, str] | None = None,
                           params: Any = None, body: Any = None) -> Any:
        url = path if path.startswith(("http://", "https://")) else f"{self.base_url}{path}"
        sent = {"User-Agent": self.http.user_agent, "Accept": "application/json", **(headers or {})}
        try:
            response = await guarded_fetch(url, policy=self.http.policy, method=method, headers=sent, params=params,
                                           json=body, max_bytes=self.http.max_bytes, timeout=self.timeout,
                                           follow_redirects=False)
        except FetchTimeout:
            raise ProviderError(self.name, f"timed out after {self.timeout:g} s") from None
        except GuardError as exc:
            raise ProviderError(self.name, str(exc)) from None
        status = response.status_code
        if status in (401, 403):
            raise ProviderError(self.name, f"the API key was refused (HTTP {status}){_detail(response.content)}")
        if status == 429:
            raise ProviderError(self.name, "rate limited (HTTP 429); try again later")
        if status >= 400:
            raise ProviderError(self.name, f"HTTP {status}{_detail(response.content)}")
        try:
            return json.loads(response.content)
        except ValueError:
            raise ProviderError(self.name, "answered with something that is not JSON") from None


def _detail(content: bytes) -> str:
    text = content[:300].decode("utf-8", "replace").strip()
    try:
        data = json.loads(content)
    except ValueError:
        return f": {text[:200]}" if text else ""
    if isinstance(data, dict):
        for key in ("detail", "error", "message"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("error") or value.get("message") or json.dumps(value)[:200]
            if value:
                return f": {str(value)[:200]}"
    return ""


class DdgsProvider(Provider):
    """DuckDuckGo (and the other engines ``ddgs`` aggregates); no key needed."""

    name = "ddgs"
    key_env = None
    supports_images = True
    default_base_url = "https://duckduckgo.com"
    _TIMELIMIT: ClassVar[dict[str, str]] = {"day": "d", "week": "w", "month": "m", "year": "y"}

    def _client(self) -> Any:
        from ddgs import DDGS

        return DDGS(proxy=self.options.get("proxy"), timeout=int(max(1, self.timeout)))

    async def _call(self, method: str, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        # the first import of ddgs loads its HTTP client and parser: not on the event loop
        errors = await asyncio.to_thread(importlib.import_module, "ddgs.exceptions")
        DDGSException, RatelimitException, TimeoutException = (  # noqa: N806
            errors.DDGSException, errors.RatelimitException, errors.TimeoutException)

        def run() -> list[dict[str, Any]]:
            return getattr(self._client(), method)(query, **kwargs)

        try:
            # ddgs is synchronous (its own HTTP client and threads): keep it off the loop.
            async with asyncio.timeout(self.timeout + 5):
                return await asyncio.to_thread(run)
        except TimeoutError:
            raise ProviderError(self.name, f"timed out after {self.timeout:g} s") from None
        except RatelimitException:
            raise ProviderError(self.name, "rate limited by the search engines; try again later") from None
        except TimeoutException:
            raise ProviderError(self.name, f"timed out after {self.timeout:g} s") from None
        except DDGSException as exc:
            if "No results found" in str(exc):
                return []
            raise ProviderError(self.name, str(exc) or type(exc).__name__) from None
        except Exception as exc:  # the engines' HTTP client raises its own types
            raise ProviderError(self.name, f"{type(exc).__name__}: {exc}") from None

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        rows = await self._call("text", query, max_results=max_results, timelimit=self._TIMELIMIT.get(time_range or ""),
                                region=self.options.get("region", "wt-wt"), backend=self.options.get("backend", "auto"))
        return parse_ddgs_text(rows)[:max_results]

    async def images(self, query: str, *, max_results: int) -> list[ImageResult]:
        rows = await self._call("images", query, max_results=max_results, region=self.options.get("region", "wt-wt"))
        return parse_ddgs_images(rows)[:max_results]


def parse_ddgs_text(rows: list[dict[str, Any]]) -> list[SearchResult]:
    return [SearchResult(title=str(r.get("title") or r.get("href")), url=str(r["href"]), snippet=str(r.get("body") or ""),
                         date=r.get("date") or None) for r in rows if r.get("href")]


def parse_ddgs_images(rows: list[dict[str, Any]]) -> list[ImageResult]:
    return [ImageResult(title=str(r.get("title") or ""), image_url=str(r["image"]), source_url=str(r.get("url") or ""),
                        thumbnail_url=str(r.get("thumbnail") or ""), width=_int(r.get("width")), height=_int(r.get("height")))
            for r in rows if r.get("image")]


class TavilyProvider(Provider):
    name = "tavily"
    key_env = "TAVILY_API_KEY"
    default_base_url = "https://api.tavily.com"
    supports_images = True

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        body: dict[str, Any] = {"query": query, "max_results": max_results,
                                "search_depth": self.options.get("search_depth", "basic")}
        if time_range:
            body["time_range"] = time_range
        data = await self.request_json("POST", "/search", headers=self._auth(), body=body)
        rows = data.get("results") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ProviderError(self.name, "the answer has no results list")
        return [SearchResult(title=str(r.get("title") or r.get("url")), url=str(r["url"]), snippet=str(r.get("content") or ""),
                             date=r.get("published_date") or None) for r in rows if isinstance(r, dict) and r.get("url")]

    async def images(self, query: str, *, max_results: int) -> list[ImageResult]:
        data = await self.request_json("POST", "/search", headers=self._auth(),
                                       body={"query": query, "max_results": max_results, "include_images": True,
                                             "include_image_descriptions": True})
        out = []
        for item in (data.get("images") or []) if isinstance(data, dict) else []:
            if isinstance(item, str):
                out.append(ImageResult(title="", image_url=item))
            elif isinstance(item, dict) and item.get("url"):
                out.append(ImageResult(title=str(item.get("description") or ""), image_url=str(item["url"])))
        return out[:max_results]

    async def extract(self, url: str) -> dict[str, Any]:
        data = await self.request_json("POST", "/extract", headers=self._auth(), body={"urls": [url]})
        rows = data.get("results") if isinstance(data, dict) else None
        if not rows:
            failed = (data.get("failed_results") or [{}])[0] if isinstance(data, dict) else {}
            raise ProviderError(self.name, f"could not extract the page: {failed.get('error') or 'no result'}")
        return {"title": "", "content": str(rows[0].get("raw_content") or ""), "final_url": str(rows[0].get("url") or url)}


class SearxngProvider(Provider):
    """A self-hosted SearXNG instance with the JSON format enabled (``search.formats``)."""

    name = "searxng"
    key_env = "SEARXNG_API_KEY"
    key_required = False
    base_url_env = "SEARXNG_BASE_URL"
    supports_images = True

    async def _query(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
        data = await self.request_json("GET", "/search", headers=headers, params={"format": "json", **params})
        rows = data.get("results") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ProviderError(self.name, "the answer has no results list (is format=json enabled?)")
        return [r for r in rows if isinstance(r, dict)]

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        params: dict[str, Any] = {"q": query, "safesearch": self.options.get("safesearch", 1)}
        if time_range:
            params["time_range"] = time_range
        if self.options.get("engines"):
            params["engines"] = self.options["engines"]
        rows = await self._query(params)
        return [SearchResult(title=str(r.get("title") or r.get("url")), url=str(r["url"]), snippet=str(r.get("content") or ""),
                             date=r.get("publishedDate") or None) for r in rows if r.get("url")][:max_results]

    async def images(self, query: str, *, max_results: int) -> list[ImageResult]:
        rows = await self._query({"q": query, "categories": "images"})
        out = []
        for r in rows:
            if not r.get("img_src"):
                continue
            width, _, height = str(r.get("resolution") or "").replace("×", "x").replace(" ", "").partition("x")
            out.append(ImageResult(title=str(r.get("title") or ""), image_url=str(r["img_src"]), source_url=str(r.get("url") or ""),
                                   thumbnail_url=str(r.get("thumbnail_src") or ""), width=_int(width), height=_int(height)))
        return out[:max_results]


class BraveProvider(Provider):
    name = "brave"
    key_env = "BRAVE_API_KEY"
    default_base_url = "https://api.search.brave.com"
    supports_images = True
    _FRESHNESS: ClassVar[dict[str, str]] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        params: dict[str, Any] = {"q": query, "count": min(max_results, 20)}
        if time_range:
            params["freshness"] = self._FRESHNESS[time_range]
        data = await self.request_json("GET", "/res/v1/web/search", headers={"X-Subscription-Token": str(self.api_key)}, params=params)
        rows = ((data.get("web") or {}).get("results") or []) if isinstance(data, dict) else []
        return [SearchResult(title=str(r.get("title") or r.get("url")), url=str(r["url"]), snippet=str(r.get("description") or ""),
                             date=r.get("page_age") or r.get("age") or None) for r in rows if isinstance(r, dict) and r.get("url")]

    async def images(self, query: str, *, max_results: int) -> list[ImageResult]:
        data = await self.request_json("GET", "/res/v1/images/search", headers={"X-Subscription-Token": str(self.api_key)},
                                       params={"q": query, "count": min(max_results, 100)})
        out = []
        for r in (data.get("results") or []) if isinstance(data, dict) else []:
            props = r.get("properties") or {}
            if props.get("url"):
                out.append(ImageResult(title=str(r.get("title") or ""), image_url=str(props["url"]), source_url=str(r.get("url") or ""),
                                       thumbnail_url=str((r.get("thumbnail") or {}).get("src") or ""),
                                       width=_int(props.get("width")), height=_int(props.get("height"))))
        return out[:max_results]


class JinaProvider(Provider):
    """Jina search (``s.jina.ai``) and, for web_fetch, the Jina reader (``r.jina.ai``)."""

    name = "jina"
    key_env = "JINA_API_KEY"
    default_base_url = "https://s.jina.ai"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", "X-Respond-With": "no-content"} if self.api_key else {}

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        data = await self.request_json("GET", "/", headers=self._headers(), params={"q": query})
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ProviderError(self.name, "the answer has no data list")
        return [SearchResult(title=str(r.get("title") or r.get("url")), url=str(r["url"]),
                             snippet=str(r.get("description") or r.get("content") or "")[:500], date=r.get("date") or None)
                for r in rows if isinstance(r, dict) and r.get("url")][:max_results]

    async def extract(self, url: str) -> dict[str, Any]:
        reader = str(self.options.get("reader_url") or "https://r.jina.ai").rstrip("/")
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        data = await self.request_json("GET", f"{reader}/{url}", headers=headers)
        page = data.get("data") if isinstance(data, dict) else None
        if not isinstance(page, dict):
            raise ProviderError(self.name, "the reader answer has no data")
        return {"title": str(page.get("title") or ""), "content": str(page.get("content") or ""), "final_url": str(page.get("url") or url)}


class FirecrawlProvider(Provider):
    name = "firecrawl"
    key_env = "FIRECRAWL_API_KEY"
    default_base_url = "https://api.firecrawl.dev"
    _TBS: ClassVar[dict[str, str]] = {"day": "qdr:d", "week": "qdr:w", "month": "qdr:m", "year": "qdr:y"}

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    async def search(self, query: str, *, max_results: int, time_range: str | None) -> list[SearchResult]:
        body: dict[str, Any] = {"query": query, "limit": max_results}
        if time_range:
            body["tbs"] = self._TBS[time_range]
        data = await self.request_json("POST", "/v2/search", headers=self._auth(), body=body)
        rows = data.get("data") if isinstance(data, dict) else None
        if isinstance(rows, dict):  # v2 groups results by source: {"web": [...], "news": [...]}
            rows = rows.get("web")
        if not isinstance(rows, list):
            raise ProviderError(self.name, f"the search failed: {data.get('error') if isinstance(data, dict) else 'no data'}")
        return [SearchResult(title=str(r.get("title") or r.get("url")), url=str(r["url"]), snippet=str(r.get("description") or ""))
                for r in rows if isinstance(r, dict) and r.get("url")]

    async def extract(self, url: str) -> dict[str, Any]:
        data = await self.request_json("POST", "/v2/scrape", headers=self._auth(),
                                       body={"url": url, "formats": ["markdown"], "onlyMainContent": True})
        page = data.get("data") if isinstance(data, dict) else None
        if not isinstance(page, dict):
            raise ProviderError(self.name, f"the scrape failed: {data.get('error') if isinstance(data, dict) else 'no data'}")
        meta = page.get("metadata") or {}
        return {"title": str(meta.get("title") or ""), "content": str(page.get("markdown") or ""),
                "final_url": str(meta.get("sourceURL") or meta.get("url") or url)}


PROVIDERS: dict[str, type[Provider]] = {p.name: p for p in (DdgsProvider, TavilyProvider, SearxngProvider, BraveProvider,
                                                            JinaProvider, FirecrawlProvider)}


def build_provider(name: str, web: Any, http: HttpSettings) -> Provider:
    """``web`` is the ``web:`` config section; an unknown name raises ``ValueError``."""
    cls = PROVIDERS.get(name)
    if cls is None:
        raise ValueError(f"unknown web provider {name!r}; known: {', '.join(PROVIDERS)}")
    return cls((getattr(web, "providers", None) or {}).get(name), http)
