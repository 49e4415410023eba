"""The console's screen: one thread at a time, a transcript above and a prompt below.

A turn runs in a Textual worker, so the screen stays live while the answer streams in; Ctrl-C
cancels that worker's run (on a server, through the cancel route first, so the run stops
there too) and never the program (Ctrl-Q quits). A question the run stops on waits in the
panel above the prompt and is answered from the keyboard; the answer resumes the run with
``Command(resume=...)``, as the web chat does.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

from rich.markup import escape
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Markdown, Static
from textual.worker import Worker

from deerflow_cli.backend import DEFAULT_AGENT, Backend, BackendError, Choice
from deerflow_cli.events import Ask, Event, Failed, Started, Text, Title, ToolCall, ToolResult, history_events
from deerflow_cli.widgets import COMMANDS, AnswerView, AskPanel, CommandSuggester, Notice, Picker, Prompt, ToolCard, UserLine, one_line

HELP = """Keys: Enter sends · Tab completes /commands and /skills · Ctrl-C cancels the run
Ctrl-T threads · Ctrl-N new thread · Ctrl-O model · Ctrl-G agent · Ctrl-Q quits
Tab and shift-Tab move between the prompt and the tool calls; Enter unfolds one.
Commands: """ + " · ".join(COMMANDS)


class DeerFlowConsole(App):
    TITLE = "DeerFlow"
    CSS = """
    #bar { height: 1; padding: 0 1; background: $primary-darken-2; color: $text; }
    #log { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    .user { margin: 1 0 0 0; color: $accent; text-style: bold; }
    .answer { margin: 0; padding: 0; }
    .answer > * { margin: 0 0 1 0; }
    .notice { margin: 1 0 0 0; color: $text-muted; }
    .notice.error { color: $error; }
    Collapsible.tool { border: none; padding: 0; margin: 0; background: $surface; }
    Collapsible.tool.failed CollapsibleTitle { color: $error; }
    Collapsible.tool Contents { padding: 0 0 0 2; }
    #ask { height: auto; max-height: 12; border: round $warning; padding: 0 1; }
    #ask:focus { border: round $accent; }
    #status { height: 1; padding: 0 1; color: $text-muted; }
    #picker { width: 76; height: auto; max-height: 20; border: round $primary; background: $surface; padding: 0 1; }
    #picker OptionList { height: auto; max-height: 16; border: none; padding: 0; }
    Picker { align: center middle; }
    """
    BINDINGS = [
        Binding("ctrl+c", "cancel", "Cancel", priority=True),
        Binding("ctrl+t", "threads", "Threads"),
        Binding("ctrl+n", "new_thread", "New"),
        Binding("ctrl+o", "pick_model", "Model"),
        Binding("ctrl+g", "pick_agent", "Agent"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, backend: Backend, *, thread_id: str | None = None, model: str | None = None,
                 agent: str | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.thread_id = thread_id
        self.thread_title = ""
        self.model = model
        self.agent = agent or DEFAULT_AGENT
        self.suggester = CommandSuggester()
        self.worker: Worker | None = None
        self.run_id: str | None = None
        self.cancel_asked = False  # Ctrl-C pressed during this turn: its end reads "Cancelled.", however it ended
        self.stream_open = False  # the turn still reads the run's stream (a worker past it is not cancelled)
        self.denying = False
        self.answers: dict[str, AnswerView] = {}
        self.cards: dict[str, ToolCard] = {}

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="bar")
        yield VerticalScroll(id="log")
        yield AskPanel()
        yield Static(id="status")
        yield Prompt(placeholder="Message DeerFlow — / for commands and skills", suggester=self.suggester, id="prompt")
        yield Footer()

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    @property
    def ask(self) -> AskPanel:
        return self.query_one(AskPanel)

    @property
    def prompt(self) -> Prompt:
        return self.query_one(Prompt)

    @property
    def running(self) -> bool:
        # From the moment a turn is started: its worker is pending for a moment before it runs,
        # and a Ctrl-C in that moment must not be taken for one with nothing to cancel.
        return self.worker is not None and not self.worker.is_finished

    def paint_bar(self) -> None:
        title = one_line(self.thread_title or ("new thread" if not self.thread_id else self.thread_id[:8]), 36)
        self.query_one("#bar", Static).update(
            f"[b]DeerFlow[/b] │ {escape(title)} │ {escape(self.model or 'default model')} │ {escape(self.agent)}")

    def status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    async def say(self, text: str, kind: str = "info") -> None:
        await self.log_view.mount(Notice(text, kind))
        self.log_view.anchor()

    async def on_mount(self) -> None:
        self.paint_bar()
        self.status(f"Connected to {self.backend.label}. /help for keys.")
        self.prompt.focus()
        self.run_worker(self.load_skills(), group="skills", exit_on_error=False)
        if self.thread_id:
            await self.open_thread(self.thread_id)

    async def load_skills(self) -> None:
        try:
            self.suggester.skills = await self.backend.skills()
        except BackendError as exc:
            await self.say(f"Skills are not available: {exc}", "error")

    # -- threads -----------------------------------------------------------------------

    async def reset_view(self) -> None:
        await self.log_view.remove_children()
        self.answers.clear()
        self.cards.clear()
        self.ask.clear()
        self.denying = False

    async def open_thread(self, thread_id: str) -> None:
        try:
            loaded = await self.backend.load(thread_id)
        except BackendError as exc:
            await self.say(f"Cannot open thread {thread_id}: {exc}", "error")
            return
        await self.reset_view()
        self.thread_id, self.thread_title = thread_id, loaded.title
        self.paint_bar()
        for kind, item in history_events(loaded.messages):
            if kind == "user":
                await self.log_view.mount(UserLine(item))
            elif isinstance(item, Text):
                await self.log_view.mount(Markdown(item.delta, classes="answer"))
            else:
                await self.apply(item)
        for value in loaded.asks:
            self.show_ask(value)
        self.log_view.anchor()
        self.status(f"Resumed thread {thread_id}.")

    async def ensure_thread(self) -> str:
        if not self.thread_id:
            self.thread_id = await self.backend.new_thread()
            self.paint_bar()
        return self.thread_id

    async def action_threads(self) -> None:
        if self.running:
            self.status("Wait for the answer, or Ctrl-C to cancel it, before switching threads.")
            return
        try:
            found = await self.backend.threads()
        except BackendError as exc:
            await self.say(f"Cannot list threads: {exc}", "error")
            return
        choices = [Choice(t.thread_id, f"{one_line(t.title or '(untitled)', 40)}  {t.status}  {t.thread_id[:8]}") for t in found]
        self.push_screen(Picker("Threads", choices, self.thread_id, by_label=True), self.picked_thread)

    async def picked_thread(self, thread_id: str | None) -> None:
        if thread_id and thread_id != self.thread_id:
            await self.open_thread(thread_id)
        self.prompt.focus()

    async def action_new_thread(self) -> None:
        if self.running:
            self.status("Wait for the answer, or Ctrl-C to cancel it, before starting a new thread.")
            return
        await self.reset_view()
        self.thread_id, self.thread_title = None, ""
        self.paint_bar()
        self.status("New thread: your next message starts it.")
        self.prompt.focus()

    # -- pickers -----------------------------------------------------------------------

    async def action_pick_model(self) -> None:
        await self.pick("model", self.backend.models)

    async def action_pick_agent(self) -> None:
        await self.pick("agent", self.backend.agents)

    async def pick(self, setting: str, listing: Any) -> None:
        """A picker for ``self.<setting>``; the choice holds from the next message on."""
        try:
            choices = await listing()
        except BackendError as exc:
            await self.say(f"Cannot list {setting}s: {exc}", "error")
            return

        def picked(name: str | None) -> None:
            if name:
                setattr(self, setting, name)
                self.paint_bar()
                self.status(f"{setting.capitalize()}: {name} (from the next message on).")
            self.prompt.focus()

        self.push_screen(Picker(setting.capitalize(), choices, getattr(self, setting)), picked)

    # -- the prompt --------------------------------------------------------------------

    def on_input_changed(self, event: Prompt.Changed) -> None:
        found = self.suggester.matches(event.value)
        if len(event.value) > 1 and found:
            self.status("  ".join(found[:8]) + ("  …" if len(found) > 8 else ""))

    async def on_input_submitted(self, event: Prompt.Submitted) -> None:
        text = event.value.strip()
        if self.running:  # the text stays in the prompt, to send when the answer is done
            self.status("An answer is running: wait for it, or Ctrl-C to cancel it.")
            return
        self.prompt.value = ""
        if self.denying:
            self.denying = False
            self.prompt.placeholder = "Message DeerFlow — / for commands and skills"
            await self.log_view.mount(UserLine("denied" + (f": {text}" if text else "")))
            self.start_turn(resume={"decision": "deny", "reason": text} if text else {"decision": "deny"})
            return
        if self.ask.kind == "approval":
            self.status("Answer the approval first: y approve · a approve for this chat · n deny.")
            self.ask.focus()
            return
        if not text:
            return
        word = text.split()[0]
        if word in COMMANDS:
            await self.command(word, text[len(word):].strip())
            return
        if self.ask.kind == "clarification":
            answer = self.ask.pick(text)
            self.ask.clear()
            await self.log_view.mount(UserLine(answer))
            self.start_turn(resume=answer)
            return
        try:
            await self.ensure_thread()
        except BackendError as exc:
            await self.say(f"Cannot start a thread: {exc}", "error")
            return
        await self.log_view.mount(UserLine(text))
        self.start_turn(text=text)

    async def command(self, word: str, rest: str) -> None:
        if word == "/quit":
            self.exit()
        elif word == "/help":
            await self.say(HELP)
        elif word == "/threads":
            await self.action_threads()
        elif word == "/new":
            await self.action_new_thread()
        elif word == "/model":
            await self.action_pick_model()
        elif word == "/agent":
            await self.action_pick_agent()
        elif word == "/upload":
            await self.upload(rest)

    async def upload(self, rest: str) -> None:
        try:
            names = shlex.split(rest)
        except ValueError as exc:
            await self.say(f"/upload: {exc}", "error")
            return
        if not names:
            await self.say("Write the file's path after /upload, e.g. /upload ~/report.pdf", "error")
            return
        try:
            thread_id = await self.ensure_thread()
            for name in names:
                path = Path(name).expanduser()
                where = await self.backend.upload(thread_id, path)
                await self.say(f"Uploaded {path.name} → {where}; the agent sees it from your next message.")
        except BackendError as exc:
            await self.say(f"Upload failed: {exc}", "error")

    # -- questions ---------------------------------------------------------------------

    def show_ask(self, value: dict[str, Any]) -> None:
        self.ask.show(value)
        if value.get("type") == "approval":
            self.ask.focus()
            self.status("The agent waits for your approval: y · a · n")
        else:
            self.prompt.focus()
            self.status("The agent waits for your answer.")
        self.log_view.anchor()

    def decide(self, decision: str) -> None:
        if self.running:
            return
        if decision == "deny":
            self.denying = True
            self.ask.clear()
            self.prompt.placeholder = "Why deny? (optional) — Enter sends the denial"
            self.prompt.focus()
            self.status("Type a reason the agent will read, or just Enter.")
            return
        self.ask.clear()
        self.prompt.focus()
        self.log_view.mount(UserLine("approved" if decision == "approve" else "approved for this chat"))
        self.start_turn(resume={"decision": decision})

    # -- a turn ------------------------------------------------------------------------

    def start_turn(self, *, text: str | None = None, resume: Any = None) -> None:
        self.run_id = None
        self.cancel_asked = False
        self.stream_open = True
        self.log_view.anchor()  # follow the answer as it grows, until the user scrolls up
        self.status("● Working… Ctrl-C cancels")
        self.worker = self.run_worker(self.turn(text=text, resume=resume), group="turn", exclusive=True, exit_on_error=False)

    async def turn(self, *, text: str | None, resume: Any) -> None:
        outcome = "Done."
        try:
            async for event in self.backend.turn(self.thread_id or "", text=text, resume=resume, model=self.model,
                                                 agent=None if self.agent == DEFAULT_AGENT else self.agent):
                await self.apply(event)
            self.stream_open = False
            if self.cancel_asked:
                # The server stopped the run and ended the stream before the worker was cancelled.
                outcome = await self.show_cancelled()
        except BackendError as exc:
            outcome = "Failed."
            await self.say(str(exc), "error")
        except Exception as exc:  # a bug here must show on the screen, not end the turn silently
            outcome = "Failed."
            await self.say(f"{type(exc).__name__}: {exc}", "error")
        except asyncio.CancelledError:
            outcome = await self.show_cancelled()
            raise
        finally:
            for view in self.answers.values():
                await view.close()
            self.answers.clear()
            self.run_id = None
            if self.ask.value is None:
                self.status(outcome)

    async def show_cancelled(self) -> str:
        for card in self.cards.values():
            if card.title.startswith("…"):
                card.mark("■")
        await self.say("Cancelled.")
        return "Ready."

    async def apply(self, event: Event) -> None:
        log = self.log_view
        if isinstance(event, Started):
            self.run_id = event.run_id
            if self.cancel_asked:  # Ctrl-C came before the server named the run
                await self.cancel_run()
        elif isinstance(event, Text):
            view = self.answers.get(event.message_id)
            if view is None:
                view = self.answers[event.message_id] = AnswerView()
                await log.mount(view)
            await view.add(event.delta)
        elif isinstance(event, ToolCall):
            card = self.cards[event.call_id] = ToolCard(event.call_id, event.name, event.args)
            await log.mount(card)
        elif isinstance(event, ToolResult):
            card = self.cards.get(event.call_id)
            if card is not None:
                card.finish(event.content, event.status)
        elif isinstance(event, Ask):
            self.show_ask(event.value)
        elif isinstance(event, Title):
            self.thread_title = event.title
            self.paint_bar()
        elif isinstance(event, Failed):
            await self.say(event.message, "error")

    async def action_cancel(self) -> None:
        if not self.running:
            self.status("Nothing is running. Ctrl-Q quits.")
            return
        self.status("Cancelling…")
        self.cancel_asked = True
        if self.run_id is None:
            # The run may already exist on the server: stopping the stream now would leave it
            # running there. The turn cancels it as soon as its stream names it.
            return
        await self.cancel_run()

    async def cancel_run(self) -> None:
        try:
            await self.backend.cancel(self.thread_id or "", self.run_id)
        except BackendError as exc:
            await self.say(f"The server did not cancel: {exc}", "error")
        if self.worker is not None and self.stream_open:
            self.worker.cancel()

    async def on_unmount(self) -> None:
        await self.backend.close()
