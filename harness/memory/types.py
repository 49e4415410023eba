"""The plain dataclasses that cross the harness/apps wall, and the API document shape."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

# Profile summaries: (attribute, section of the API document, key there).
SUMMARY_KEYS: tuple[tuple[str, str, str], ...] = (
    ("work_context", "user", "workContext"),
    ("personal_context", "user", "personalContext"),
    ("top_of_mind", "user", "topOfMind"),
    ("recent_months", "history", "recentMonths"),
    ("earlier_context", "history", "earlierContext"),
    ("long_term_background", "history", "longTermBackground"),
)
# "correction": an explicit correction by the user (DeerFlow's category; staleness review spares it by default).
CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "identity", "correction")
MAX_FACT_CHARS = 1000
MAX_SUMMARY_CHARS = 3000
DOC_VERSION = "1.0"


class RevisionConflict(Exception):
    """Someone saved the profile since it was loaded: reload and apply the change again."""


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(value: dt.datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def parse_time(value: Any) -> dt.datetime | None:
    if not value:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


@dataclass
class Fact:
    id: str
    content: str
    category: str = "context"
    confidence: float = 0.5
    created_at: dt.datetime = field(default_factory=now)
    last_confirmed_at: dt.datetime | None = None
    valid_until: dt.datetime | None = None
    # Provenance: "conversation" facts name their thread, run and message; "user" facts were
    # written by the owner (the API or the Memory page) and the model may not remove them.
    source_kind: str = "conversation"
    source_thread_id: str = ""
    source_run_id: str = ""
    source_message_id: str = ""
    revision: int = 1

    @property
    def protected(self) -> bool:
        return self.source_kind == "user"

    def to_api(self) -> dict:
        return {
            "id": self.id, "content": self.content, "category": self.category, "confidence": self.confidence,
            "createdAt": iso(self.created_at), "lastConfirmedAt": iso(self.last_confirmed_at), "validUntil": iso(self.valid_until),
            "source": {"kind": self.source_kind, "threadId": self.source_thread_id or None, "runId": self.source_run_id or None,
                       "messageId": self.source_message_id or None},
            "revision": self.revision,
        }

    @classmethod
    def from_api(cls, data: dict) -> Fact:
        source = data.get("source") or {}
        if isinstance(source, str):  # DeerFlow's export: the source thread id as a string
            source = {"kind": "conversation", "threadId": source}
        return cls(
            id=str(data["id"]), content=str(data["content"]), category=str(data.get("category") or "context"),
            confidence=float(data.get("confidence", 0.5)), created_at=parse_time(data.get("createdAt")) or now(),
            last_confirmed_at=parse_time(data.get("lastConfirmedAt")), valid_until=parse_time(data.get("validUntil")),
            source_kind=str(source.get("kind") or "conversation"), source_thread_id=str(source.get("threadId") or ""),
            source_run_id=str(source.get("runId") or ""), source_message_id=str(source.get("messageId") or ""),
            revision=int(data.get("revision") or 1),
        )


@dataclass
class MemoryDoc:
    owner: str
    agent: str = ""
    summaries: dict[str, str] = field(default_factory=lambda: {k: "" for k, _, _ in SUMMARY_KEYS})
    facts: list[Fact] = field(default_factory=list)
    revision: int = 0
    paused: bool = False
    updated_at: dt.datetime | None = None

    def fact(self, fact_id: str) -> Fact | None:
        return next((f for f in self.facts if f.id == fact_id), None)

    def to_api(self) -> dict:
        # Always a time, as DeerFlow's documents have it: its frontend refuses to import a
        # document without one and shows "57 years ago" for none. Never updated: as of now.
        updated = self.updated_at or dt.datetime.now(dt.UTC)
        doc: dict[str, Any] = {"version": DOC_VERSION, "revision": self.revision, "lastUpdated": iso(updated),
                               "paused": self.paused, "user": {}, "history": {}}
        for attr, section, key in SUMMARY_KEYS:
            doc[section][key] = {"summary": self.summaries.get(attr, "")}
        doc["facts"] = [f.to_api() for f in self.facts]
        return doc

    def copy(self) -> MemoryDoc:
        return MemoryDoc(owner=self.owner, agent=self.agent, summaries=dict(self.summaries),
                         facts=[Fact(**asdict(f)) for f in self.facts], revision=self.revision, paused=self.paused,
                         updated_at=self.updated_at)


def parse_document(data: Any, *, owner: str, agent: str = "") -> MemoryDoc:
    """A whole imported document, checked before anything changes; ValueError says why."""
    if not isinstance(data, dict):
        raise ValueError("the memory document must be a JSON object")
    doc = MemoryDoc(owner=owner, agent=agent)
    for attr, section, key in SUMMARY_KEYS:
        part = data.get(section) or {}
        if not isinstance(part, dict):
            raise ValueError(f"'{section}' must be an object")
        value = part.get(key) or ""
        text = value.get("summary", "") if isinstance(value, dict) else value
        if not isinstance(text, str):
            raise ValueError(f"'{section}.{key}.summary' must be a string")
        if len(text) > MAX_SUMMARY_CHARS:
            raise ValueError(f"'{section}.{key}' is longer than {MAX_SUMMARY_CHARS} characters")
        doc.summaries[attr] = text
    facts = data.get("facts") or []
    if not isinstance(facts, list):
        raise ValueError("'facts' must be a list")
    seen = set()
    for i, raw in enumerate(facts):
        if not isinstance(raw, dict) or not isinstance(raw.get("content"), str) or not raw["content"].strip():
            raise ValueError(f"facts[{i}] needs a non-empty string 'content'")
        try:
            fact = Fact.from_api({"id": raw.get("id") or f"import-{i}", **{k: v for k, v in raw.items() if k != "id"}})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"facts[{i}]: {exc}") from None
        check_fact(fact.content, fact.category, fact.confidence, where=f"facts[{i}]")
        if fact.id in seen:
            raise ValueError(f"facts[{i}]: id '{fact.id}' appears twice")
        seen.add(fact.id)
        doc.facts.append(fact)
    return doc


def check_fact(content: str, category: str, confidence: float, *, where: str = "fact") -> None:
    if not content.strip():
        raise ValueError(f"{where}: content must not be empty")
    if len(content) > MAX_FACT_CHARS:
        raise ValueError(f"{where}: content is longer than {MAX_FACT_CHARS} characters")
    if category not in CATEGORIES:
        raise ValueError(f"{where}: category must be one of {', '.join(CATEGORIES)}")
    if not 0 <= confidence <= 1:
        raise ValueError(f"{where}: confidence must be between 0 and 1")
