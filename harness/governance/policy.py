"""Approval rules: which tool calls need a person's yes, which are refused outright.

A rule names tools (exact names or ``fnmatch`` globs such as ``mcp__*``), optionally a
regular expression, and an action: ``ask`` (pause for approval), ``deny`` or ``allow``.
The expression is searched in *every* string inside the call's arguments, whatever the key,
so a model cannot slip past a rule by renaming ``command`` to ``cmd`` or by tucking the
text into another field (a tool whose schema rejects the renamed key does not run anyway).

Rules come in layers: the operator's (``config.yaml`` ``approvals.rules``) and a user's own
(stored by the apps). Within a layer the first matching rule wins; across layers the
strictest decision wins (deny > ask > allow), so a user rule can tighten the operator's
policy and never loosen it. Rules are compiled once, when the config is loaded.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ACTIONS = ("ask", "deny", "allow")
_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
_GLOB_CHARS = frozenset("*?[")
MAX_PATTERN_CHARS = 1000


class RuleError(ValueError):
    """A rule that cannot be compiled; the message names the rule."""


@dataclass(frozen=True)
class Rule:
    name: str
    tools: tuple[str, ...]
    action: str
    pattern: re.Pattern[str] | None = None
    agents: frozenset[str] = frozenset()
    source: str = "config"

    def applies_to_tool(self, tool: str) -> bool:
        return any(t == tool or (_is_glob(t) and fnmatch.fnmatchcase(tool, t)) for t in self.tools)

    def matches(self, tool: str, args: Any, agent: str | None) -> bool:
        if self.agents and (agent or "") not in self.agents:
            return False
        if not self.applies_to_tool(tool):
            return False
        if self.pattern is None:
            return True
        return any(self.pattern.search(text) for text in string_leaves(args))

    @property
    def key(self) -> str:
        """What an "approve always for this thread" grant remembers."""
        return f"{self.source}:{self.name}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "action": self.action, "tools": list(self.tools),
                "match": self.pattern.pattern if self.pattern is not None else None}


def _is_glob(name: str) -> bool:
    return any(c in _GLOB_CHARS for c in name)


def string_leaves(value: Any, depth: int = 0) -> Iterable[str]:
    """Every scalar inside the arguments, as text. Keys are not trusted to mean anything."""
    if depth > 20:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from string_leaves(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from string_leaves(v, depth + 1)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def args_digest(args: Any) -> str:
    """SHA-256 of the canonical JSON of the arguments: the audit proves what was approved
    without keeping commands (which may hold secrets) in the database."""
    text = json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def compile_rule(raw: Mapping[str, Any], *, index: int, source: str = "config") -> Rule:
    name = str(raw.get("name") or f"rule {index + 1}").strip()
    label = f"approval rule '{name}'"
    tools = raw.get("tool", raw.get("tools"))
    if isinstance(tools, str):
        tools = [tools]
    if not isinstance(tools, list | tuple) or not tools or not all(isinstance(t, str) and t.strip() for t in tools):
        raise RuleError(f"{label}: 'tool' must name a tool (or a list of tool names / globs)")
    action = raw.get("action")
    if action not in ACTIONS:
        raise RuleError(f"{label}: unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    pattern = raw.get("match")
    compiled = None
    if pattern not in (None, ""):
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
            raise RuleError(f"{label}: 'match' must be a regular expression of at most {MAX_PATTERN_CHARS} characters")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise RuleError(f"{label}: invalid regular expression {pattern!r}: {exc}") from None
    agents = raw.get("agents") or []
    if isinstance(agents, str):
        agents = [agents]
    if not isinstance(agents, list | tuple) or not all(isinstance(a, str) for a in agents):
        raise RuleError(f"{label}: 'agents' must be a list of agent names")
    return Rule(name=name, tools=tuple(t.strip() for t in tools), action=action, pattern=compiled,
                agents=frozenset(a.strip() for a in agents if a.strip()), source=source)


@dataclass(frozen=True)
class Decision:
    action: str  # allow | ask | deny
    rule: Rule | None


ALLOW = Decision("allow", None)


@dataclass
class Policy:
    """Compiled rules of one layer, indexed by tool so an unruled tool costs one set lookup."""

    rules: tuple[Rule, ...] = ()
    _exact: frozenset[str] = field(init=False, default=frozenset())
    _globs: tuple[str, ...] = field(init=False, default=())
    _glob_hits: dict[str, bool] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._exact = frozenset(t for r in self.rules for t in r.tools if not _is_glob(t))
        self._globs = tuple(t for r in self.rules for t in r.tools if _is_glob(t))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def may_gate(self, tool: str) -> bool:
        if tool in self._exact:
            return True
        if not self._globs:
            return False
        hit = self._glob_hits.get(tool)
        if hit is None:  # tool names are few; remember each answer
            hit = self._glob_hits[tool] = any(fnmatch.fnmatchcase(tool, g) for g in self._globs)
        return hit

    def first_match(self, tool: str, args: Any, agent: str | None) -> Rule | None:
        if not self.may_gate(tool):
            return None
        return next((r for r in self.rules if r.matches(tool, args, agent)), None)


def compile_policy(raws: Sequence[Mapping[str, Any]], *, source: str = "config") -> Policy:
    rules = [compile_rule(raw, index=i, source=source) for i, raw in enumerate(raws)]
    names = [r.name for r in rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise RuleError(f"approval rule names must be unique; repeated: {', '.join(dupes)}")
    return Policy(tuple(rules))


def decide(layers: Sequence[Policy], tool: str, args: Any, agent: str | None) -> Decision:
    """The strictest first-match over the layers; ``allow`` when nothing matches."""
    best = ALLOW
    for layer in layers:
        rule = layer.first_match(tool, args, agent)
        if rule is not None and _SEVERITY[rule.action] > _SEVERITY[best.action]:
            best = Decision(rule.action, rule)
    return best
