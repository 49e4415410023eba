"""GitHub agents that react to events: a delivery fans out to every custom agent whose
``github:`` block binds the repository and lists the event (apps/agents/github.py).

Each agent that fires gets one run, as the agent's owner, on a thread of its own per
(repository, issue or PR number, agent): the id is a UUID5 of the three, so the same PR's
later events continue the same thread and two agents on one PR never share one.

The run is started inside the webhook request. A delivery that could not be handed to a run
(the agent's thread still busy with the previous event, a refused admission, a database
error) makes the webhook answer 503, so the delivery shows as failed in GitHub and a
redelivery starts it then. Each (delivery, agent) is claimed only once its run was admitted
(``X-GitHub-Delivery`` is the key): a redelivery starts what failed and nothing twice.

The agent writes back with ``gh`` in its sandbox. The server's GitHub token
(``channels.github.api_token`` / ``GITHUB_API_TOKEN``) reaches those commands as ``GH_TOKEN``
and ``GITHUB_TOKEN`` through the run's request secrets: held in memory for this one run, never
stored, logged, or given to another run or thread, and masked in tool output.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.agents.selectors import github_bound_agents
from apps.channels.common import claim_delivery, release_delivery
from apps.runs.schemas import RunCreate
from apps.runs.services import start_run
from apps.threads.services import thread_create, thread_title_set

log = logging.getLogger(__name__)

EVENTS = frozenset({"issues", "pull_request", "pull_request_review", "pull_request_review_comment", "issue_comment"})
# Field defaults per event (DeerFlow's): a PR fires when opened; comments need a mention.
DEFAULTS: dict[str, dict[str, Any]] = {
    "pull_request": {"actions": ["opened"]},
    "issue_comment": {"require_mention": True},
    "pull_request_review_comment": {"require_mention": True},
}
THREAD_NAMESPACE = uuid.UUID("5c7f8e1a-2b44-4c8e-9a53-8f1d3e6b0a47")
TOKEN_NAMES = ("GH_TOKEN", "GITHUB_TOKEN")
MAX_TEXT = 4000


@dataclass
class FanOut:
    started: list[str] = field(default_factory=list)  # agent names whose run was admitted now
    already: list[str] = field(default_factory=list)  # started by an earlier delivery of this id
    skipped: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"started": self.started, "already_started": self.already, "skipped": self.skipped, "failed": self.failed}


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def target(event: str, payload: Mapping[str, Any]) -> tuple[str, int] | None:
    """(repository, issue or PR number) the event is about."""
    repo = _dict(payload.get("repository")).get("full_name")
    holder = _dict(payload.get("issue") if event in ("issues", "issue_comment") else payload.get("pull_request"))
    number = holder.get("number", payload.get("number"))
    if not isinstance(repo, str) or not isinstance(number, int) or isinstance(number, bool):
        return None
    return repo, number


def _body(event: str, payload: Mapping[str, Any]) -> str:
    key = {"issue_comment": "comment", "pull_request_review_comment": "comment", "issues": "issue",
           "pull_request": "pull_request", "pull_request_review": "review"}[event]
    body = _dict(payload.get(key)).get("body")
    return body if isinstance(body, str) else ""


def _author(event: str, payload: Mapping[str, Any]) -> str:
    key = {"issue_comment": "comment", "pull_request_review_comment": "comment", "issues": "issue",
           "pull_request": "pull_request", "pull_request_review": "review"}[event]
    login = _dict(_dict(payload.get(key)).get("user")).get("login") or _dict(payload.get("sender")).get("login")
    return login if isinstance(login, str) else ""


def mentions(body: str, login: str) -> bool:
    return bool(login) and re.search(rf"(?<![A-Za-z0-9-])@{re.escape(login)}(?![A-Za-z0-9-])", body, re.IGNORECASE) is not None


def fires(event: str, payload: Mapping[str, Any], trigger: Mapping[str, Any], login: str) -> tuple[bool, str]:
    """Whether one binding's trigger fires for this delivery, and why (for the response)."""
    merged = {**DEFAULTS.get(event, {}), **{k: v for k, v in trigger.items() if v is not None}}
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    if merged.get("actions") is not None and action not in merged["actions"]:
        return False, f"action {action!r} is not one of {merged['actions']}"
    if action == "labeled" and merged.get("labels"):
        label = _dict(payload.get("label")).get("name")
        if label not in merged["labels"]:
            return False, f"label {label!r} is not one of {merged['labels']}"
    author = _author(event, payload)
    if author and author.lower() in {a.lower() for a in merged.get("allow_authors") or ()}:
        return True, f"author {author} is allowed"
    if merged.get("require_mention"):
        wanted = merged.get("mention_login") or login
        if not mentions(_body(event, payload), wanted):
            return False, f"no @{wanted} mention"
    return True, f"action {action}" if action else "fired"


def _self_event(payload: Mapping[str, Any], match: Mapping[str, Any]) -> bool:
    """The agent's own activity (a comment it posted with gh) must not start it again."""
    sender = _dict(payload.get("sender")).get("login")
    if not isinstance(sender, str):
        return False
    own = {match["bot_login"], *match["mention_logins"]} - {""} or {match["name"]}
    return sender.removesuffix("[bot]").lower() in {o.lower() for o in own}


def _clip(text: Any) -> str:
    text = text if isinstance(text, str) else ""
    # What people wrote cannot close the marker around it and go on as instructions.
    text = re.sub(r"</?\s*github-event\s*>", "[github-event]", text, flags=re.IGNORECASE)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 20] + "\n[…truncated…]"


def prompt(event: str, payload: Mapping[str, Any], repo: str, number: int) -> str:
    """What the agent is told. What people wrote on GitHub is marked as such, so a title or a
    comment cannot pose as the operator's instructions."""
    action = payload.get("action") or ""
    issue, pr = _dict(payload.get("issue")), _dict(payload.get("pull_request"))
    parent = pr or issue
    kind = "pull request" if pr or issue.get("pull_request") else "issue"
    lines = [f"GitHub event: {event} ({action}) on {kind} #{number} in {repo}.",
             "<github-event>",
             f"Title: {_clip(parent.get('title'))}",
             f"Author: {_dict(parent.get('user')).get('login', '')}",
             f"URL: {parent.get('html_url', '')}"]
    if event == "pull_request" and action == "synchronize":
        lines.append(f"New head commit: {_dict(pr.get('head')).get('sha', '')}")
    if action == "labeled":
        lines.append(f"Label added: {_dict(payload.get('label')).get('name', '')}")
    if event in ("issues", "pull_request"):
        lines += ["Description:", _clip(parent.get("body")) or "(none)"]
    else:
        holder = _dict(payload.get("review") if event == "pull_request_review" else payload.get("comment"))
        where = f" on {holder['path']}" if isinstance(holder.get("path"), str) else ""
        lines += [f"Comment by @{_dict(holder.get('user')).get('login', '')}{where}:", _clip(holder.get("body")) or "(empty)"]
    lines.append("</github-event>")
    lines.append(f"Decide what to do about it and do it. Your final message stays in this DeerFlow thread and is not posted; "
                 f"to answer on GitHub use "
                 f"`gh` yourself (e.g. `gh {'pr' if kind == 'pull request' else 'issue'} comment {number} --repo {repo}`).")
    return "\n".join(lines)


def thread_id_for(repo: str, number: int, agent_id: str) -> str:
    return str(uuid.uuid5(THREAD_NAMESPACE, f"{repo.lower()}#{number}:{agent_id}"))


def _start(match: Mapping[str, Any], event: str, payload: Mapping[str, Any], repo: str, number: int, delivery: str,
           token: str) -> str:
    """Admit the agent's run; its id. Raises what admission raises (busy thread, ...)."""

    owner = match["owner"]
    thread_id = thread_id_for(repo, number, match["agent_id"])
    thread = thread_create(owner=owner, thread_id=thread_id, assistant_id=match["agent_id"],
                           metadata={"origin": "github", "github_repository": repo, "github_number": number})
    if not thread.title:
        thread_title_set(thread_id=thread_id, title=f"GitHub: {repo}#{number} ({match['title']})"[:255])
    # Nobody watches these runs: no clarification questions, and approval gates follow the
    # run's approval_policy (deny by default), as scheduled runs do.
    context: dict[str, Any] = {"non_interactive": True}
    if token:
        context["secrets"] = {name: token for name in TOKEN_NAMES}
        context["command_secrets"] = list(TOKEN_NAMES)
    request = RunCreate(
        assistant_id=match["agent_id"],
        input={"messages": [{"role": "user", "content": prompt(event, payload, repo, number)}]},
        metadata={"origin": "channel", "channel": "github", "github_event": event, "github_delivery": delivery},
        context=context, multitask_strategy="reject", stream_mode=["values"],
        config={"recursion_limit": match["recursion_limit"]} if match.get("recursion_limit") else None,
    )
    return str(start_run(user=owner, thread_id=thread_id, request=request).run.pk)


def fan_out(event: str, payload: Mapping[str, Any], *, delivery: str, default_login: str, token: str) -> FanOut:
    """Start a run for every bound agent the event fires. Blocking (ORM, start_run)."""

    outcome = FanOut()
    where = target(event, payload)
    if where is None:
        return outcome
    repo, number = where
    for match in github_bound_agents(repo=repo):
        name = match["name"]
        trigger = match["triggers"].get(event)
        if trigger is None:
            continue  # events are opt-in per binding
        if _self_event(payload, match):
            outcome.skipped.append({"agent": name, "reason": "its own activity"})
            continue
        fired, why = fires(event, payload, trigger, match["bot_login"] or default_login or name)
        if not fired:
            outcome.skipped.append({"agent": name, "reason": why})
            continue
        key = ("github-agent", delivery, match["agent_id"])
        if not claim_delivery(key):
            outcome.already.append(name)
            continue
        try:
            run_id = _start(match, event, payload, repo, number, delivery, token)
        except Exception as exc:  # nothing was handed over: the claim goes, a redelivery retries
            release_delivery(key)
            detail = getattr(exc, "detail", None) or f"{type(exc).__name__}: {exc}"
            log.warning("github: delivery %s (%s) could not start agent %s: %s", delivery, event, name, detail)
            outcome.failed.append({"agent": name, "reason": str(detail)})
            continue
        log.info("github: delivery %s (%s %s#%s) started agent %s, run %s", delivery, event, repo, number, name, run_id)
        outcome.started.append(name)
    return outcome
