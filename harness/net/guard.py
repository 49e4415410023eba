"""The SSRF guard: the one way the harness makes outbound HTTP requests to addresses it
does not control (web fetch, search providers, and later MCP over HTTP, webhooks and
channel media downloads).

A URL is refused unless its scheme is http or https and every address its host resolves
to is public. The request then connects to the address that was checked, never to a
second DNS answer, so a rebinding name cannot swap a private address in between; TLS
still verifies the certificate against the host name (SNI). Redirects pass through the
same transport, so each hop is checked again. The body is read in chunks against a size
cap, and the whole exchange, redirects included, runs under one deadline.

API::

    policy = GuardPolicy.from_networks(["10.20.0.0/16"])      # operator allow-list
    result = await guarded_fetch("https://example.org/", policy=policy)
    async with guarded_client(policy) as client:               # for streaming or APIs
        await client.post(...)
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import httpx

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT = 20.0
ALLOWED_SCHEMES = frozenset({"http", "https"})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud instance-metadata endpoints (AWS/GCP/Azure/OpenStack, AWS IPv6, Alibaba). They stay
# refused even when an allow-list network covers them: an intranet allow-list is never
# meant to hand out cloud credentials.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class GuardError(Exception):
    """A request the guard refused or could not complete; ``str()`` is a short reason
    meant for a tool error."""


class BlockedURL(GuardError):
    pass


class ResponseTooLarge(GuardError):
    pass


class FetchTimeout(GuardError):
    pass


@dataclass(frozen=True)
class GuardPolicy:
    """``allowed_networks``: private networks the operator opened (intranet, tests)."""

    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_networks(cls, networks: Iterable[str]) -> GuardPolicy:
        return cls(tuple(ipaddress.ip_network(n.strip(), strict=False) for n in networks))

    def allows(self, ip: IPAddress) -> bool:
        return any(ip.version == n.version and ip in n for n in self.allowed_networks)


DEFAULT_POLICY = GuardPolicy()


def check_networks(values: Iterable[str]) -> list[str]:
    """A config allow-list as written, or a ValueError naming the entry that is no network."""
    values = list(values)
    for item in values:
        try:
            ipaddress.ip_network(str(item).strip(), strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP network (write e.g. 10.0.0.0/8 or 127.0.0.1/32)") from None
    return values


def _unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 form carries (::ffff:a.b.c.d, 64:ff9b::a.b.c.d, ::a.b.c.d)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
        packed = int(ip)
        if 1 < packed <= 0xFFFFFFFF:  # deprecated IPv4-compatible ::a.b.c.d
            return ipaddress.IPv4Address(packed)
    return ip


def address_problem(ip: IPAddress, policy: GuardPolicy = DEFAULT_POLICY) -> str | None:
    """Why *ip* may not be contacted, or None when it may."""
    inner = _unwrap(ip)
    if ip in METADATA_ADDRESSES or inner in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if policy.allows(ip) or policy.allows(inner):
        return None
    # an IPv6 form that wraps an IPv4 address is judged by the IPv4 address it reaches
    if inner.is_unspecified:
        return "an unspecified address"
    if inner.is_loopback:
        return "a loopback address"
    if inner.is_link_local:
        return "a link-local address"
    if inner.is_multicast:
        return "a multicast address"
    if isinstance(inner, ipaddress.IPv4Address) and inner in _CGNAT:
        return "a carrier-grade NAT (100.64.0.0/10) address"
    if inner.is_reserved:
        return "a reserved address"
    if inner.is_private:
        return "a private address"
    if not inner.is_global:
        return "a reserved address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """An IP written in the host, in any form the C resolver accepts: dotted, IPv6, and
    the decimal, octal and hex shorthands (2130706433, 0177.0.0.1, 0x7f.1, 127.1)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_url(url: str | httpx.URL) -> httpx.URL:
    """Scheme and shape only (no DNS); raises :class:`BlockedURL`."""
    try:
        parsed = httpx.URL(str(url)) if not isinstance(url, httpx.URL) else url
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise BlockedURL(f"invalid URL: {exc}") from None
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise BlockedURL(f"the {parsed.scheme or 'missing'}:// scheme is not allowed; only http and https URLs can be fetched")
    if not parsed.host:
        raise BlockedURL("the URL has no host")
    if parsed.userinfo:
        raise BlockedURL("URLs with a user name or password are not allowed")
    return parsed


Resolver = Callable[[str, int], Awaitable[list[str]]]


async def resolve_checked(host: str, port: int, policy: GuardPolicy = DEFAULT_POLICY,
                          resolver: Resolver | None = None) -> IPAddress:
    """The address to connect to. Every address the name resolves to must pass: a name
    answering both a public and a private address is refused, not half-trusted.
    ``resolver`` replaces the system resolver (split-horizon DNS, tests)."""
    literal = literal_address(host)
    if literal is not None:
        addresses = [literal]
    elif resolver is not None:
        try:
            addresses = [ipaddress.ip_address(a) for a in await resolver(host, port)]
        except ValueError as exc:
            raise GuardError(f"cannot resolve host {host!r}: {exc}") from None
        if not addresses:
            raise GuardError(f"cannot resolve host {host!r}")
    else:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise GuardError(f"cannot resolve host {host!r}: {getattr(exc, 'strerror', None) or exc}") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos))
        if not addresses:
            raise GuardError(f"cannot resolve host {host!r}")
    for ip in addresses:
        problem = address_problem(ip, policy)
        if problem:
            shown = host if str(ip) == host.strip("[]") else f"{host} ({ip})"
            raise BlockedURL(f"{shown} is {problem}; requests to private and internal addresses are refused")
    return addresses[0]


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # Built once: creating a context loads the CA bundle, which costs milliseconds.
    return httpx.create_ssl_context()


class GuardedTransport(httpx.AsyncBaseTransport):
    """Checks each request's URL, resolves its host once and connects to that address."""

    def __init__(self, policy: GuardPolicy = DEFAULT_POLICY, *, resolver: Resolver | None = None, **transport_kwargs: Any) -> None:
        self.policy = policy
        self.resolver = resolver
        transport_kwargs.setdefault("verify", _ssl_context())
        # No pooling across hosts: a pooled TLS connection is keyed by IP, and reusing it
        # for another host name on the same IP would skip that name's certificate check.
        transport_kwargs.setdefault("limits", httpx.Limits(max_keepalive_connections=0))
        self._inner = httpx.AsyncHTTPTransport(**transport_kwargs)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = check_url(request.url)
        host = url.host
        port = url.port or (443 if url.scheme == "https" else 80)
        ip = await resolve_checked(host, port, self.policy, self.resolver)
        extensions = dict(request.extensions)
        if url.scheme == "https" and literal_address(host) is None:
            extensions["sni_hostname"] = host
        pinned = request.url.copy_with(host=str(ip))
        headers = request.headers.copy()
        headers["Host"] = url.netloc.decode("ascii")
        pinned_request = httpx.Request(request.method, pinned, headers=headers, stream=request.stream, extensions=extensions)
        response = await self._inner.handle_async_request(pinned_request)
        response.request = request
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_client(policy: GuardPolicy = DEFAULT_POLICY, *, timeout: float = DEFAULT_TIMEOUT,
                   follow_redirects: bool = True, headers: Mapping[str, str] | None = None,
                   resolver: Resolver | None = None) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request, redirect hops included, is guarded.
    ``trust_env=False``: an environment proxy would connect somewhere the guard never saw."""
    return httpx.AsyncClient(transport=GuardedTransport(policy, resolver=resolver), timeout=timeout, follow_redirects=follow_redirects,
                             max_redirects=MAX_REDIRECTS, trust_env=False, headers=headers)


@dataclass
class FetchedResponse:
    url: str
    final_url: str
    status_code: int
    headers: httpx.Headers
    content: bytes
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                return value.strip("\"' ")
        return None


async def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The body, refused with ``ResponseTooLarge`` as soon as it passes ``max_bytes``."""
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(f"the response is {int(declared):,} bytes, over the {max_bytes:,}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(f"the response is over the {max_bytes:,}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


async def guarded_fetch(url: str, *, policy: GuardPolicy = DEFAULT_POLICY, method: str = "GET",
                        headers: Mapping[str, str] | None = None, params: Any = None, json: Any = None,
                        max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = DEFAULT_TIMEOUT,
                        follow_redirects: bool = True, resolver: Resolver | None = None) -> FetchedResponse:
    """One request with the body read into memory. Raises :class:`GuardError` subclasses
    (refused, too large, timed out, too many redirects, network error), never httpx's."""
    check_url(url)
    await asyncio.to_thread(_ssl_context)  # the first call reads the CA bundle: off the loop
    try:
        async with asyncio.timeout(timeout):
            async with guarded_client(policy, timeout=timeout, follow_redirects=follow_redirects, resolver=resolver) as client:
                async with client.stream(method, url, headers=headers, params=params, json=json) as response:
                    body = await read_capped(response, max_bytes)
                    return FetchedResponse(url=url, final_url=str(response.url), status_code=response.status_code,
                                           headers=response.headers, content=body,
                                           redirects=[str(r.url) for r in response.history])
    except TimeoutError:
        raise FetchTimeout(f"no complete response within {timeout:g} seconds") from None
    except httpx.TooManyRedirects:
        raise GuardError(f"more than {MAX_REDIRECTS} redirects") from None
    except httpx.TimeoutException:
        raise FetchTimeout(f"no complete response within {timeout:g} seconds") from None
    except httpx.UnsupportedProtocol as exc:
        raise BlockedURL(f"redirect to an unsupported scheme: {exc}") from None
    except httpx.HTTPError as exc:
        raise GuardError(f"network error: {type(exc).__name__}: {exc}".rstrip(": ")) from None
