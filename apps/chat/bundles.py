"""The chat page's scripts and stylesheets, each set served as one file.

The chat page is built from about forty small modules (docs/chat.md#modules). Loaded one by
one, a first visit costs forty-odd requests: over HTTP/1.1 that is several round trips to a
distant server, and each request is a trip through Daphne and Django. Here each list is
concatenated in its order, as the browser would have run the files, and served at a URL that
names the content's digest, so a browser keeps it until the content changes. There is still no
build step: the files are read from the static folders (the staticfiles finders) the first time
a page asks, and again whenever one changes where WhiteNoise re-reads static files
(``WHITENOISE_AUTOREFRESH``, on for `make run`).

Adding a module to the chat page means adding it to its list here, where the template's own
``<script>`` tag used to be.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass

from django.conf import settings
from django.contrib.staticfiles import finders

# Each module is an IIFE that reads what the files before it defined (window.DFKit, ...): the
# order is the order they run in.
SCRIPTS = (
    "vendor/marked.umd.js", "vendor/purify.min.js", "vendor/highlight.min.js",
    "chat/kit.js", "chat/markdown.js", "chat/scroll.js", "chat/working.js", "chat/modes.js", "chat/viewer.js",
    "chat/tool_cards.js", "chat/timestamps.js", "chat/transcript.js", "chat/todos.js", "chat/clarify.js",
    "chat/socket.js", "chat/attach.js", "chat/web_tools.js", "chat/browser_view.js", "chat/subagents.js",
    "chat/feedback.js", "chat/workspace_changes.js", "chat/governance.js", "chat/skill_complete.js",
    "chat/polish.js", "chat/export.js", "shares/share_dialog.js", "chat/agent_picker.js", "chat/versions.js",
    "chat/message_actions.js", "chat/tags.js", "knowledge/attach.js", "chat/voice.js", "chat/sidebar.js",
    "chat/app.js",
)
# Not the highlight themes: the theme switch turns those two sheets on and off by themselves.
STYLES = (
    "chat/chat.css", "chat/sidebar.css", "chat/ergonomics.css", "chat/browser_view.css", "chat/versions.css",
    "shares/shares.css", "chat/tags.css", "chat/voice.css",
)
KINDS = {"js": ("text/javascript; charset=utf-8", SCRIPTS), "css": ("text/css; charset=utf-8", STYLES)}
NAME = "chat"


class BundleError(LookupError):
    pass


@dataclass(frozen=True)
class Bundle:
    kind: str
    content: bytes
    digest: str
    stamp: tuple

    @property
    def filename(self) -> str:
        return f"{NAME}.{self.digest}.{self.kind}"


def _source(path: str) -> str:
    found = finders.find(path)
    if not found:
        raise BundleError(f"static file {path} of the chat {path.rsplit('.', 1)[-1]} bundle was not found")
    return found


def _stamp(sources: list[str]) -> tuple:
    return tuple((st.st_mtime_ns, st.st_size) for st in map(os.stat, sources))


def _join(kind: str, sources: list[str], names: tuple[str, ...]) -> bytes:
    parts = []
    for name, source in zip(names, sources, strict=True):
        with open(source, "rb") as f:
            text = f.read()
        # A source map comment is about the file it ends; in the middle of the bundle it
        # would point the browser's tools at a map of the wrong file.
        lines = [line for line in text.splitlines() if not line.lstrip().startswith(b"//# sourceMappingURL=")]
        parts.append(f"/* {name} */\n".encode() + b"\n".join(lines))
    # ";" between scripts: a file ending in an expression without one would join the next.
    return (b"\n;\n" if kind == "js" else b"\n").join(parts) + b"\n"


_lock = threading.Lock()
# By kind and the static folders they were found in (a test's own folders are another key).
_built: dict[tuple, Bundle] = {}
_sources: dict[tuple, list[str]] = {}


def bundle(kind: str) -> Bundle:
    """The current bundle of ``kind`` ("js" or "css"), built when first asked for and again
    when a file changed, where static files are re-read (``WHITENOISE_AUTOREFRESH``)."""
    if kind not in KINDS:
        raise BundleError(f"no chat bundle of kind {kind!r}")
    key = (kind, tuple(map(str, settings.STATICFILES_DIRS)))
    with _lock:
        built = _built.get(key)
        if built is not None and not getattr(settings, "WHITENOISE_AUTOREFRESH", False):
            return built
        names = KINDS[kind][1]
        try:
            sources = _sources.get(key) or [_source(name) for name in names]
            stamp = _stamp(sources)
        except FileNotFoundError:  # a file moved between folders: look for each again
            sources = [_source(name) for name in names]
            stamp = _stamp(sources)
        _sources[key] = sources
        if built is not None and built.stamp == stamp:
            return built
        content = _join(kind, sources, names)
        built = _built[key] = Bundle(kind, content, hashlib.sha256(content).hexdigest()[:16], stamp)
        return built
