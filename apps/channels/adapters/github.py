"""GitHub: webhook deliveries in, an issue comment (or a log line) out.

GitHub has no socket to hold open: deliveries arrive at ``POST /api/channels/github/webhook``
(apps/channels/webhooks.py), which checks the HMAC and hands the payload to ``translate``
here. Only a comment that mentions the bot's login becomes an inbound message; everything
else (other events, edits, the bot's own comments, other bots) is acknowledged and dropped.

The conversation key is ``(repository, issue or PR number)``: every mention on one issue
continues one agent thread. The delivery id (``X-GitHub-Delivery``) is the message id, which
is what the follow-up buffer dedups on when GitHub redelivers.

Outbound: without ``api_token`` the answer is logged — the agent writes back itself with
``gh`` in its sandbox, as DeerFlow does, so several agents on one event stay quiet unless
they choose to speak. With a token the answer is posted as an issue comment through the REST
API (PRs are issues there, so review comments get their answer on the PR conversation).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from apps.channels.base import Capabilities, ChannelAdapter, ChatRef, InboundMessage, SentMessage
from apps.channels.registry import register

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_LOGIN = "deerflow"
# The comment events that can address the bot, and the action that means "a new comment".
COMMENT_EVENTS = {
    "issue_comment": ("comment", "created"),
    "pull_request_review_comment": ("comment", "created"),
    "pull_request_review": ("review", "submitted"),
}
MAX_BODY = 60_000  # GitHub's own comment limit is 65,536 characters


class MalformedDelivery(ValueError):
    """A signed delivery whose payload is not what the event promises: logged and acknowledged."""


def webhook_secret(settings: Mapping[str, Any]) -> str:
    return str(os.environ.get("GITHUB_WEBHOOK_SECRET") or settings.get("webhook_secret") or "").strip()


def api_token(settings: Mapping[str, Any]) -> str:
    """The server's GitHub token: posts answers, and is the bound agents' GH_TOKEN."""
    return str(settings.get("api_token") or os.environ.get("GITHUB_API_TOKEN") or "").strip()


def signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """``X-Hub-Signature-256`` is ``sha256=`` + hex HMAC-SHA256 of the raw body."""
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def mention_login(settings: Mapping[str, Any]) -> str:
    # default_mention_login: DeerFlow's name for the same setting.
    return str(settings.get("mention_login") or settings.get("default_mention_login") or DEFAULT_LOGIN).lstrip("@").strip()


def _mention_pattern(login: str) -> re.Pattern:
    # A login is letters, digits and single hyphens: "@deerflow" must not match "@deerflow-ci".
    return re.compile(rf"(?<![\w-])@{re.escape(login)}(?![\w-])", re.IGNORECASE)


def _field(data: Any, *path: str, kind: type | tuple = str) -> Any:
    for depth, key in enumerate(path, 1):
        if not isinstance(data, Mapping):
            raise MalformedDelivery(f"payload.{'.'.join(path[:depth - 1])} has the wrong type")
        if key not in data:
            raise MalformedDelivery(f"payload.{'.'.join(path[:depth])} is missing")
        data = data[key]
    if not isinstance(data, kind):
        raise MalformedDelivery(f"payload.{'.'.join(path)} has the wrong type")
    return data


def translate(event: str, payload: Any, *, delivery: str, settings: Mapping[str, Any]) -> InboundMessage | None:
    """The inbound message a delivery stands for; None when it does not address the bot.

    Raises ``MalformedDelivery`` when a comment event lacks what GitHub always sends.
    """
    if event not in COMMENT_EVENTS:
        return None
    if not isinstance(payload, Mapping):
        raise MalformedDelivery("the payload is not a JSON object")
    key, wanted_action = COMMENT_EVENTS[event]
    if payload.get("action") != wanted_action:
        return None
    login = mention_login(settings)
    comment = _field(payload, key, kind=Mapping)
    body = comment.get("body") or ""
    if not isinstance(body, str):
        raise MalformedDelivery(f"payload.{key}.body has the wrong type")
    author = _field(payload, key, "user", "login")
    author_id = _field(payload, key, "user", "id", kind=int)
    if author.lower() == login.lower() or _field(payload, key, "user", kind=Mapping).get("type") == "Bot":
        return None  # our own answer (or another bot's) must never start a run: no loops
    pattern = _mention_pattern(login)
    if not pattern.search(body):
        return None
    repo = _field(payload, "repository", "full_name")
    target_key = "issue" if event == "issue_comment" else "pull_request"
    target = _field(payload, target_key, kind=Mapping)
    number = _field(payload, target_key, "number", kind=int)
    title = target.get("title") if isinstance(target.get("title"), str) else ""
    is_pr = event != "issue_comment" or bool(target.get("pull_request"))
    url = comment.get("html_url") or target.get("html_url") or ""
    text = pattern.sub("", body).strip()[:MAX_BODY]
    extra = {"event": event, "repository": repo, "number": number, "url": url, "request": text}
    chat = ChatRef(provider="github", workspace="", chat=repo, topic=str(number))
    if text.startswith("/"):
        # A command ("@bot /connect CODE", "@bot /status") is its first line alone: the
        # manager parses the rest of the text as the command's argument.
        return InboundMessage(chat=chat, sender_id=str(author_id), sender_name=author, text=text.splitlines()[0].strip(),
                              message_id=delivery, is_direct=False, mentioned=True, extra=extra)
    kind = "pull request" if is_pr else "issue"
    where = ""
    if event == "pull_request_review_comment" and isinstance(comment.get("path"), str):
        line = comment.get("line") or comment.get("original_line")
        where = f"\nFile: {comment['path']}" + (f" (line {line})" if isinstance(line, int) else "")
    # The comment is what the person asked; the rest is context the agent needs to act with
    # `gh` (which repository, which issue), marked as such so the title cannot pose as the ask.
    message = (
        f"{text}\n\n"
        f"<github-context>\nRepository: {repo}\n{kind.capitalize()} #{number}: {title}\n"
        f"Comment by @{author}: {url}{where}\nEvent: {event}\n</github-context>"
    )
    return InboundMessage(chat=chat, sender_id=str(author_id), sender_name=author, text=message, message_id=delivery,
                          is_direct=False, mentioned=True, extra={**extra, "chat_title": f"{repo}#{number} {title}".strip()})


@register
class GitHubAdapter(ChannelAdapter):
    provider = "github"
    display_name = "GitHub"
    # A posted comment is final: no streaming edits, no files (the agent attaches via `gh`).
    capabilities = Capabilities(edit=False, edit_interval=0, max_text=MAX_BODY, files_out=False)

    def __init__(self, settings: Mapping[str, Any], sink, hooks=None) -> None:
        super().__init__(settings, sink, hooks)
        self.api_url = str(settings.get("api_base_url") or DEFAULT_API_URL).rstrip("/")
        self.api_token = api_token(settings)
        self.posted: int = 0

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        return [] if webhook_secret(settings) else ["GITHUB_WEBHOOK_SECRET (the webhook's secret)"]

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        login = mention_login(settings or {})
        return "", (f"Comment on an issue or pull request of a repository whose webhook points here: "
                    f"@{login} /connect {code}")

    async def direct_chat(self, external_id: str, workspace: str = "") -> ChatRef:
        raise ValueError("GitHub has no direct messages: results can only be posted on the issue that asked")

    async def start(self) -> None:
        """Nothing to connect: deliveries come to the web server's webhook route, which is
        ready once the secret is set, so the channel counts as connected."""
        await self.hooks.connected(bot_name=mention_login(self.settings))

    async def stop(self) -> None:
        """Nothing to disconnect."""

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        if not self.api_token:
            log.info("github: answer for %s#%s (not posted: no api_token; the agent writes back with gh):\n%s",
                     chat.chat, chat.topic, text)
            return SentMessage(chat=chat, message_id="")
        from harness.config import get_app_config
        from harness.net.guard import GuardPolicy, guarded_fetch

        policy = GuardPolicy.from_networks(get_app_config().web.allowed_private_networks)
        response = await guarded_fetch(
            f"{self.api_url}/repos/{chat.chat}/issues/{chat.topic}/comments", method="POST", policy=policy,
            headers={"Authorization": f"Bearer {self.api_token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28"},
            json={"body": text[:MAX_BODY]}, timeout=30,
        )
        if response.status_code != 201:
            raise RuntimeError(f"github: posting the comment on {chat.chat}#{chat.topic} failed: HTTP {response.status_code} "
                               f"{response.content[:200].decode('utf-8', 'replace')}")
        self.posted += 1
        return SentMessage(chat=chat, message_id=str(json.loads(response.content).get("id", "")))
