"""Follow-up suggestions: ``GET /suggestions/config`` and ``POST /threads/{id}/suggestions``.

Asked for by the client after an answer has ended, so the answer never waits for them.
Off unless ``suggestions.enabled`` (then the route answers an empty list, not an error, so
a client may ask unconditionally)."""

from __future__ import annotations

import logging
from typing import Any

from apps.chat.oneshot import one_shot
from apps.errors import ServiceUnavailable
from apps.runs.selectors import messages_page
from harness.agents import suggestions
from harness.config.loader import get_app_config

logger = logging.getLogger(__name__)


def suggestions_config() -> dict:
    return suggestions.suggestions_config_json(get_app_config())


def _messages(thread, given: Any) -> list[dict]:
    if given is not None:
        return given
    rows = messages_page(thread=thread, limit=20)["data"]
    return [r["content"] for r in rows if r["content"].get("type") in ("human", "ai") and r["content"].get("content")
            and not (r["content"].get("additional_kwargs") or {}).get("hide_from_ui")]


def thread_suggestions(*, thread, messages: Any = None, n: Any = None, model_name: Any = None) -> dict:
    app = get_app_config()
    cfg = app.suggestions
    count = suggestions.check_request(app, messages=messages, n=n, model_name=model_name)
    conversation = _messages(thread, messages)
    if not cfg.enabled or not conversation:
        return {"suggestions": [], "enabled": cfg.enabled}
    try:
        found = one_shot(app, model_name=cfg.model_name or model_name, purpose="for suggestions", trace_name="suggest_agent",
                         thread_id=thread.pk, user_id=str(thread.owner_id), timeout=30,
                         call=lambda model: suggestions.suggest(model, conversation, count))
    except ServiceUnavailable:
        raise
    except Exception as exc:  # a failed suggestion call costs the user nothing: no chips
        logger.info("No suggestions for thread %s: %s", thread.pk, exc)
        found = []
    return {"suggestions": found, "enabled": True}
