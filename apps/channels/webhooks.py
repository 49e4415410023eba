"""Platform webhooks: GitHub deliveries and Slack's Events API.

Both are plain Django views, exempt from CSRF and from session/token auth because the
platform signs every request: the signature is checked over the raw body before anything is
parsed, and a bad one is a 401 that starts nothing.

A route whose secret is not configured answers exactly as an unknown URL does (404): an
unconfigured server must not even reveal that it could take deliveries.

What the platform sent is acknowledged quickly (GitHub gives up after 10 s, Slack after 3 s);
the run happens afterwards on the channel host (``hosting.py``). Malformed payloads
are logged and acknowledged with a 2xx so the platform does not redeliver them forever.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from apps.channels import github_agents, hosting
from apps.channels.adapters import github
from deerflow_site.error_pages import not_found

log = logging.getLogger(__name__)


def _github_payload(request) -> object:
    # A webhook can be set to either content type; the HMAC covers the raw body in both.
    if request.content_type == "application/x-www-form-urlencoded":
        values = parse_qs(request.body.decode("utf-8", "replace")).get("payload")
        if not values:
            raise github.MalformedDelivery("the form body has no payload field")
        text = values[0]
    else:
        text = request.body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        raise github.MalformedDelivery("the payload is not JSON") from None


def _github(request):
    """Everything a delivery needs before its 202, in one worker thread (config reads, the
    HMAC, parsing); handing the message over does not wait for the run."""
    settings = hosting.provider_settings("github")
    secret = github.webhook_secret(settings)
    if not secret:
        return not_found(request)
    if not github.signature_valid(secret, request.body, request.headers.get("X-Hub-Signature-256")):
        log.warning("github: delivery %s refused: bad or missing X-Hub-Signature-256", request.headers.get("X-GitHub-Delivery"))
        return JsonResponse({"detail": "X-Hub-Signature-256 does not match the body signed with GITHUB_WEBHOOK_SECRET"}, status=401)
    event = request.headers.get("X-GitHub-Event", "")
    delivery = request.headers.get("X-GitHub-Delivery", "")
    if event == "ping":
        return JsonResponse({"handled": True, "event": "ping"})
    if not delivery:
        log.warning("github: a %s delivery without X-GitHub-Delivery was dropped", event or "(no event)")
        return JsonResponse({"handled": False, "detail": "X-GitHub-Delivery header is missing"}, status=202)
    if event not in github.COMMENT_EVENTS and event not in github_agents.EVENTS:
        # Acknowledged as done (200), so it is not shown as failed: nothing here takes it.
        log.info("github: delivery %s of event %r: nothing handles it", delivery, event)
        return JsonResponse({"handled": False, "event": event, "delivery": delivery})
    try:
        payload = _github_payload(request)
        message = github.translate(event, payload, delivery=delivery, settings=settings)
    except github.MalformedDelivery as exc:
        log.warning("github: delivery %s (%s) is malformed and was dropped: %s", delivery, event, exc)
        return JsonResponse({"handled": False, "detail": f"malformed {event} payload: {exc}"}, status=202)
    agents = None
    if event in github_agents.EVENTS and isinstance(payload, dict):
        why_not = hosting.unavailable("github")
        if why_not:
            log.warning("github: delivery %s dropped: %s", delivery, why_not)
            return JsonResponse({"handled": False, "detail": why_not}, status=202)
        agents = github_agents.fan_out(event, payload, delivery=delivery, default_login=github.mention_login(settings),
                                       token=github.api_token(settings))
        if agents.failed:
            # Not handed to a run: a 503 marks the delivery failed, and redelivering it starts
            # what failed (the agents already started are claimed and not started twice).
            return JsonResponse({"handled": False, "delivery": delivery, "agents": agents.as_json(),
                                 "detail": "; ".join(f"{f['agent']}: {f['reason']}" for f in agents.failed)}, status=503)
    handled_by_agents = bool(agents and (agents.started or agents.already))
    if message is None:
        body = {"handled": handled_by_agents, "delivery": delivery}
        if agents is not None:
            body["agents"] = agents.as_json()
        if not handled_by_agents:
            body["detail"] = f"{event or 'the event'} does not address the bot"
        return JsonResponse(body, status=202)
    why_not = hosting.unavailable("github")
    if why_not:
        log.warning("github: delivery %s dropped: %s", delivery, why_not)
        return JsonResponse({"handled": False, "detail": why_not}, status=202)
    hosting.dispatch("github", message)
    body = {"handled": True, "delivery": delivery}
    if agents is not None:
        body["agents"] = agents.as_json()
    return JsonResponse(body, status=202)


# Async views: under Daphne a sync view holds Django's one sync thread, which the channel
# code's ORM calls on the runs loop also need; an async view holds no thread while it waits.
@login_not_required  # public: the platform's signature is the authentication
@csrf_exempt
@require_POST
async def github_webhook(request):
    return await sync_to_async(_github, thread_sensitive=False)(request)


@login_not_required
@csrf_exempt
@require_POST
async def slack_events(request):
    handler = await sync_to_async(hosting.events_handler, thread_sensitive=False)("slack")
    if handler is None:
        return not_found(request)
    status, headers, body = await asyncio.wrap_future(handler(request.body, dict(request.headers)))
    if status == 401:
        # bolt refused it before any listener ran; say why in our error shape.
        log.warning("slack: Events API request refused: bad or missing X-Slack-Signature")
        return JsonResponse({"detail": "X-Slack-Signature does not match the body signed with the signing secret, "
                                       "or X-Slack-Request-Timestamp is more than 5 minutes old"}, status=401)
    return HttpResponse(body, status=status, content_type=headers.get("content-type", "text/plain;charset=utf-8"))
