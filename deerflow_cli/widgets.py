"""The console's pieces: the transcript entries, the question panel, the pickers and the prompt.

Everything is plain keyboard: a tool call is a folded line (Enter on it unfolds the arguments
and the result), a question waits in the panel above the prompt, a picker is a list with
Enter and Escape. Nothing animates, so a slow SSH link redraws only what changed.
"""

from __future__ import annotations

import json
import os
from typing import Any

from rich.markup import escape
from textual import events
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Collapsible, Input, Label, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from deerflow_cli.backend import Choice

# The console's own commands; any other "/name" is a skill (the agent's slash activation).
COMMANDS = {
    "/threads": "pick a thread to resume",
    "/new": "start a new thread",
    "/model": "pick the model",
    "/agent": "pick the agent",
    "/upload": "/upload PATH: attach a file to the thread",
    "/help": "the keys and commands",
    "/quit": "leave the console",
}
ARG_PREVIEW = 60
RESULT_MAX = 4000


def one_line(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_summary(name: str, args: dict[str, Any]) -> str:
    # The argument a person recognises a call by: the command, the path, the query.
    for key in ("command", "description", "path", "query", "url", "question", "filepaths"):
        if args.get(key):
            return one_line(args[key] if isinstance(args[key], str) else json.dumps(args[key]), ARG_PREVIEW)
    return one_line(json.dumps(args, ensure_ascii=False), ARG_PREVIEW) if args else ""


class UserLine(Static):
    def __init__(self, text: str) -> None:
        super().__init__(f"[b]›[/b] {escape(text)}", classes="user")


class Notice(Static):
    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(escape(text), classes=f"notice {kind}")


class ToolCard(Collapsible):
    """One tool call, folded to a line: its name, what it was called with, then its outcome."""

    def __init__(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        self.call_id, self.tool, self.summary = call_id, name, call_summary(name, args)
        self.args_text = escape(json.dumps(args, indent=2, ensure_ascii=False))
        self.body = Static(self.args_text, classes="tool-args")
        super().__init__(self.body, title=self._heading("…"), collapsed=True, classes="tool")

    def _heading(self, mark: str) -> str:
        return f"{mark} {self.tool} {self.summary}".rstrip()

    def finish(self, content: str, status: str) -> None:
        failed = status == "error"
        self.title = self._heading("✗" if failed else "✓")
        shown = content if len(content) <= RESULT_MAX else content[:RESULT_MAX] + "\n… (cut)"
        self.body.update(f"{self.args_text}\n[b]{'error' if failed else 'result'}:[/b]\n{escape(shown)}")
        self.set_class(failed, "failed")

    def mark(self, word: str) -> None:
        self.title = self._heading(word)


class AnswerView(Markdown):
    """An answer growing as its deltas arrive; rendered as Markdown throughout."""

    def __init__(self) -> None:
        super().__init__("", classes="answer")
        self.text = ""
        self.stream = None

    async def add(self, delta: str) -> None:
        if self.stream is None:
            self.stream = Markdown.get_stream(self)
        self.text += delta
        await self.stream.write(delta)

    async def close(self) -> None:
        if self.stream is not None:
            await self.stream.stop()
            self.stream = None


class AskPanel(Static, can_focus=True):
    """The question the run waits on. A clarification is answered in the prompt (a number
    picks an option); an approval with a key: y approve, a approve for this chat, n deny."""

    BINDINGS = [
        Binding("y", "decide('approve')", "Approve"),
        Binding("a", "decide('approve_always')", "Always"),
        Binding("n", "decide('deny')", "Deny"),
    ]

    def __init__(self) -> None:
        super().__init__("", id="ask")
        self.value: dict[str, Any] | None = None
        self.display = False

    @property
    def kind(self) -> str | None:
        return self.value.get("type") if self.value else None

    def show(self, value: dict[str, Any]) -> None:
        self.value = value
        if value.get("type") == "approval":
            lines = ["[b]Approval needed[/b]"]
            for req in value.get("requests") or []:
                tool, rule = str(req.get("tool", "")), str((req.get("rule") or {}).get("name", ""))
                tail = f"  (rule {rule})" if rule else ""
                # One line per call at 80 columns: the panel's border and padding take 4, the indent 4.
                room = max(20, 71 - len(tool) - len(tail))
                what = one_line(req.get("summary") or call_summary(tool, req.get("args") or {}), room)
                lines.append(f"  {escape(tool)}: {escape(what)}[dim]{escape(tail)}[/dim]")
            lines.append("[b]y[/b] approve  [b]a[/b] approve for this chat  [b]n[/b] deny")
        else:
            req = value.get("human_input") or {}
            lines = ["[b]The agent asks[/b]", escape(req.get("question") or value.get("text") or "")]
            options = req.get("options") or []
            lines += [f"  [b]{i}[/b] {escape(one_line(opt, 70))}" for i, opt in enumerate(options, 1)]
            lines.append("Type your answer below" + (" or a number" if options else "") + ", then Enter.")
        self.update("\n".join(lines))
        self.display = True

    def clear(self) -> None:
        self.value = None
        self.display = False

    def pick(self, answer: str) -> str:
        """A clarification answer: the option a number names, else the text itself."""
        options = ((self.value or {}).get("human_input") or {}).get("options") or []
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        return answer

    def action_decide(self, decision: str) -> None:
        if self.kind == "approval":
            self.app.decide(decision)


class CommandSuggester(Suggester):
    """Completes "/..." at the start of the prompt: the console's commands, then the skills."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.skills: list[Choice] = []

    def names(self) -> list[str]:
        return [*COMMANDS, *(f"/{s.name}" for s in self.skills)]

    def matches(self, value: str) -> list[str]:
        if not value.startswith("/") or " " in value:
            return []
        return [n for n in self.names() if n.startswith(value)]

    async def get_suggestion(self, value: str) -> str | None:
        found = self.matches(value)
        return found[0] if found and found[0] != value else None


class Prompt(Input):
    """The message box. Tab completes a "/name" as a shell does: the one match with a space
    after it, or the longest prefix several share (the status line lists them)."""

    def __init__(self, *, suggester: CommandSuggester, **kwargs: Any) -> None:
        super().__init__(suggester=suggester, **kwargs)
        self.completer = suggester

    async def _on_key(self, event: events.Key) -> None:
        # Here, not as a binding: a binding's action runs later than the keys typed after
        # it, so a quick "Tab, then more text" would complete after the text had landed.
        if event.key == "tab":
            found = self.completer.matches(self.value)
            if found:
                event.stop()
                event.prevent_default()
                self.value = found[0] + " " if len(found) == 1 else os.path.commonprefix(found)
                self.cursor_position = len(self.value)
                return
        await super()._on_key(event)


class Picker(ModalScreen[str | None]):
    """A list to choose from: Enter picks, Escape leaves it as it was."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Back")]

    def __init__(self, title: str, choices: list[Choice], current: str | None = None, *, by_label: bool = False) -> None:
        super().__init__()
        self.heading, self.choices, self.current, self.by_label = title, choices, current, by_label

    def _text(self, choice: Choice) -> str:
        mark = "•" if choice.name == self.current else " "
        if self.by_label:
            return f"{mark} {escape(choice.label)}"
        return f"{mark} {escape(choice.name)}" + (f"  [dim]{escape(one_line(choice.label, 50))}[/dim]" if choice.label else "")

    def compose(self):
        options = [Option(self._text(c), id=c.name) for c in self.choices]
        with Vertical(id="picker"):
            yield Label(f"[b]{escape(self.heading)}[/b]  [dim]Enter picks · Esc goes back[/dim]")
            yield OptionList(*options) if options else Label("(nothing to choose)")

    def on_mount(self) -> None:
        for lst in self.query(OptionList):
            lst.focus()
            names = [c.name for c in self.choices]
            if self.current in names:
                lst.highlighted = names.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
