"""Who may scrape ``/metrics``: a caller presenting the metrics token, or one whose address is
on the allow-list (loopback unless ``METRICS_ALLOWED_IPS`` says otherwise)."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import JsonResponse

WWW_AUTHENTICATE = 'Bearer realm="metrics"'


def parse_networks(entries: list[str]) -> tuple:
    networks = []
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {entry!r} is not an IP address or CIDR network") from None
    return tuple(networks)


_networks_cache: tuple[tuple, tuple] | None = None


def _networks() -> tuple:
    global _networks_cache
    entries = tuple(settings.METRICS_ALLOWED_IPS)
    if _networks_cache is None or _networks_cache[0] != entries:
        _networks_cache = (entries, parse_networks(list(entries)))
    return _networks_cache[1]


def _address_allowed(remote: str) -> bool:
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return any(address in net or (mapped is not None and mapped in net) for net in _networks())


def refusal(request) -> JsonResponse | None:
    """None when the request may scrape; else the 401/403 answer saying why not."""
    token = settings.METRICS_TOKEN
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if token and header:
        scheme, _, presented = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode()):
            return None
        response = JsonResponse({"detail": "metrics: the bearer token is not the metrics token"}, status=401)
        response["WWW-Authenticate"] = WWW_AUTHENTICATE
        return response
    if _address_allowed(request.META.get("REMOTE_ADDR", "")):
        return None
    if token:
        response = JsonResponse({"detail": "metrics: send the metrics token (Authorization: Bearer …) or scrape from an allowed address"},
                                status=401)
        response["WWW-Authenticate"] = WWW_AUTHENTICATE
        return response
    return JsonResponse({"detail": "metrics: this address is not in METRICS_ALLOWED_IPS"}, status=403)
