"""A custom agent's ``github:`` block: the repositories it is bound to and the events that
start it (DeerFlow's per-agent GitHub bindings, same keys).

    github:
      bot_login: my-bot            # the login the agent posts as: its own events never start it
      recursion_limit: 150         # optional ceiling for these runs
      bindings:
        - repo: octo/hello
          triggers:
            pull_request: {actions: [opened, synchronize]}
            issues: {actions: [labeled], labels: [triage]}
            pull_request_review_comment: {}          # require_mention defaults to true here

Events are opt-in per binding. Validation lives here, where agents are written; what an event
does with a binding is ``apps/channels/github_agents.py``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from apps.errors import InvalidRequest

EVENTS = ("issues", "pull_request", "pull_request_review", "pull_request_review_comment", "issue_comment")
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
MAX_BINDINGS = 50


def _blank_to_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else (value.strip().lstrip("@") if isinstance(value, str) else value)


class GitHubTrigger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    actions: list[str] | None = None  # only these payload actions fire (None: any)
    require_mention: bool | None = None  # None: the event's default (comments: true)
    allow_authors: list[str] = Field(default_factory=list)  # their events fire without a mention
    mention_login: str | None = None
    labels: list[str] = Field(default_factory=list)  # with action "labeled": only these labels fire

    _blank = field_validator("mention_login", mode="before")(_blank_to_none)


class GitHubBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repo: str
    triggers: dict[Literal[EVENTS], GitHubTrigger] = Field(default_factory=dict)  # type: ignore[valid-type]

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        if not REPO_RE.match(value.strip()):
            raise ValueError("must be owner/name")
        return value.strip().lower()


class GitHubBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bot_login: str | None = None
    # DeerFlow's GitHub App installation: accepted so its agent files load; the token these
    # runs get is the server's channels.github.api_token (docs/channels.md#github-agents).
    installation_id: int | None = None
    recursion_limit: int | None = Field(default=None, ge=1, le=1000)
    bindings: list[GitHubBinding] = Field(default_factory=list, max_length=MAX_BINDINGS)

    _blank = field_validator("bot_login", mode="before")(_blank_to_none)

    @field_validator("bindings")
    @classmethod
    def _one_binding_per_repo(cls, value: list[GitHubBinding]) -> list[GitHubBinding]:
        repos = [b.repo for b in value]
        twice = sorted({r for r in repos if repos.count(r) > 1})
        if twice:
            raise ValueError(f"one binding per repository; {', '.join(twice)} appears more than once")
        return value


def github_clean(value: Any) -> dict | None:
    """The stored form of a ``github`` block (None clears it); a 422 naming the field."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise InvalidRequest("github: must be an object or null")
    try:
        block = GitHubBlock.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("github", *first["loc"]))
        raise InvalidRequest(f"{where}: {first['msg']}") from None
    return block.model_dump(exclude_none=True, exclude_defaults=True) or None
