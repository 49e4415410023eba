"""HTTP callbacks of the platforms that push events (Feishu/Lark in webhook mode, WeCom).

Each view answers 404 unless its channel is configured for callbacks, so an unconfigured
deployment exposes nothing (the same as not mounting the route, without rebuilding the URL
conf when config.yaml changes). A request whose signature or token does not verify is a 401
and nothing is forwarded; a verified but malformed payload is acknowledged (200) and logged,
because the platform would otherwise redeliver it forever. Verified messages are handed to
the channel worker over the channel layer (``apps.channels.common.publish_webhook``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from apps.channels.common import publish_webhook

log = logging.getLogger(__name__)


def channel_settings(provider: str) -> dict[str, Any] | None:
    """The provider's section when ``channels.enabled`` and ``channels.<provider>.enabled``, else ``None``."""
    from apps.channels.config import channels_settings

    settings = channels_settings()  # get_app_config(): re-parsed only when the file changed
    return dict(settings.provider(provider)) if settings.provider_enabled(provider) else None


def _detail(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


# --- Feishu / Lark --------------------------------------------------------------------------

_FEISHU_AUTH_FAILURES = ("verification_token", "signature", "encrypt_key", "credentials")


@login_not_required  # public by design: the platform's signature is the authentication
@csrf_exempt
async def feishu_events(request: HttpRequest) -> HttpResponse:
    settings = await asyncio.to_thread(channel_settings, "feishu")  # the config check stats a file
    if settings is None or settings.get("mode") != "webhook":
        return _detail(404, "the Feishu/Lark callback is not configured (channels.feishu.mode: webhook)")
    if request.method != "POST":
        return _detail(405, "POST the event as JSON")
    try:
        import lark_oapi as lark
        from lark_oapi.core.model import RawRequest
    except ImportError:
        return _detail(503, "the Feishu/Lark SDK (lark-oapi) is not installed on this server")

    captured: list[Any] = []
    # The SDK's own dispatcher decrypts, checks the verification token and the signature, and
    # answers the url_verification challenge; we only keep the parsed event.
    pressed: list[dict[str, Any]] = []

    def card_action(data: Any) -> Any:
        # A button of a question or approval: only what the adapter needs crosses the bridge.
        from lark_oapi.event.callback.model.p2_card_action_trigger import P2CardActionTriggerResponse

        event, header = data.event, data.header
        pressed.append({"open_id": getattr(event.operator, "open_id", None), "value": getattr(event.action, "value", None),
                        "tenant_key": getattr(event.operator, "tenant_key", None) or getattr(header, "tenant_key", None),
                        "chat_id": getattr(event.context, "open_chat_id", None),
                        "message_id": getattr(event.context, "open_message_id", None), "event_id": getattr(header, "event_id", None)})
        return P2CardActionTriggerResponse({"toast": {"type": "info", "content": "Got it"}})

    handler = (lark.EventDispatcherHandler.builder(str(settings.get("encrypt_key") or ""),
                                                   str(settings.get("verification_token") or ""))
               .register_p2_im_message_receive_v1(captured.append).register_p2_card_action_trigger(card_action).build())
    raw = RawRequest()
    raw.uri = request.path
    raw.body = request.body
    raw.headers = {key: value for key, value in request.headers.items()}
    resp = handler.do(raw)
    if resp.status_code == 200:
        for event in captured:
            await publish_webhook("feishu", {"event_json": lark.JSON.marshal(event)})
        for action in pressed:
            await publish_webhook("feishu", {"card_action": action})
        return HttpResponse(resp.content, status=200, content_type="application/json")
    try:
        reason = str(json.loads(resp.content).get("msg", ""))
    except ValueError:
        reason = resp.content.decode("utf-8", "replace")
    encrypted = b'"encrypt"' in (request.body or b"")
    if any(word in reason for word in _FEISHU_AUTH_FAILURES) or (encrypted and "processor not found" not in reason):
        # A payload that does not decrypt with our key is as unauthenticated as a bad signature.
        log.warning("feishu callback refused: %s", reason)
        return _detail(401, f"the event did not verify: {reason}")
    log.warning("feishu callback payload ignored: %s", reason)
    return JsonResponse({"detail": f"ignored: {reason}"}, status=200)


# --- WeCom ---------------------------------------------------------------------------------

def _xml_fields(text: str) -> dict[str, str]:
    """The flat fields of a WeCom XML message; entity tricks are refused by defusedxml."""
    from defusedxml.ElementTree import fromstring

    root = fromstring(text)
    return {child.tag: (child.text or "") for child in root}


@login_not_required
@csrf_exempt
async def wecom_callback(request: HttpRequest) -> HttpResponse:
    from apps.channels.adapters.wecom_crypto import WeComCrypto, WeComCryptoError

    settings = await asyncio.to_thread(channel_settings, "wecom")
    if settings is None:
        return _detail(404, "the WeCom callback is not configured (channels.wecom)")
    if request.method not in ("GET", "POST"):
        return _detail(405, "WeCom calls back with GET (URL check) or POST (messages)")
    missing = [key for key in ("msg_signature", "timestamp", "nonce") if not request.GET.get(key)]
    if request.method == "GET" and not request.GET.get("echostr"):
        missing.append("echostr")
    if missing:
        return _detail(400, f"missing query parameters: {', '.join(missing)}")
    try:
        crypto = WeComCrypto(str(settings.get("token", "")), str(settings.get("encoding_aes_key", "")),
                             str(settings.get("corp_id", "")))
    except WeComCryptoError as exc:
        log.error("wecom callback: %s", exc)
        return _detail(503, f"the WeCom channel is misconfigured: {exc}")
    query = request.GET
    if request.method == "GET":
        try:
            echo = crypto.open(query["msg_signature"], query["timestamp"], query["nonce"], query["echostr"])
        except WeComCryptoError as exc:
            return _detail(401, f"the URL check did not verify: {exc}")
        return HttpResponse(echo, content_type="text/plain; charset=utf-8")
    try:
        encrypted = _xml_fields(request.body.decode("utf-8")).get("Encrypt", "")
    except Exception as exc:
        return _detail(400, f"the body is not WeCom's XML envelope: {type(exc).__name__}")
    if not encrypted:
        return _detail(400, "the XML envelope has no Encrypt element")
    try:
        plaintext = crypto.open(query["msg_signature"], query["timestamp"], query["nonce"], encrypted)
    except WeComCryptoError as exc:
        log.warning("wecom callback refused: %s", exc)
        return _detail(401, f"the message did not verify: {exc}")
    try:
        fields = _xml_fields(plaintext)
    except Exception as exc:
        log.warning("wecom callback: verified message is not readable XML (%s); acknowledged", type(exc).__name__)
        return HttpResponse("", content_type="text/plain")
    await publish_webhook("wecom", {"fields": fields})
    # An empty 200 tells WeCom the message arrived; the answer follows through the send API.
    return HttpResponse("", content_type="text/plain")
