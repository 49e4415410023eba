"""``config.yaml``'s ``browser:`` section: the limits of the agent's live browser
(harness/tools/browser, docs/tools.md "Browser").

DeerFlow configures its browser on the ``browser_navigate`` tool entry (``timeout_ms``,
``viewport_width``, ``viewport_height``, ``allow_private_addresses``, ``headless``); those keys
are read there too and win over this section, so a DeerFlow file means the same here. The
limits DeerFlow does not have (sessions per server, memory, time per run, idle timeout) live
only here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from harness.net.guard import check_networks

# Under the thread's outputs: the browser's step screenshots, shown in the chat's tool cards.
# Progress, not deliverables, so a run's workspace changes leave them out.
BROWSER_FRAMES_DIRNAME = ".browser-frames"


class BrowserConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Debian's package; Playwright's own browser download is never used.
    executable_path: str = "/usr/bin/chromium"
    max_sessions: int = Field(4, ge=1, le=64)  # live browsers per server process
    # How long a call waits for a free session before it gets a clear tool error.
    queue_timeout_seconds: float = Field(30, ge=0, le=600)
    idle_timeout_seconds: float = Field(300, gt=0, le=86400)
    page_load_timeout_ms: PositiveInt = 30000
    max_seconds_per_run: float = Field(600, gt=0, le=86400)  # browser time one run may spend
    memory_mb: int = Field(512, ge=64, le=16384)  # V8 heap cap per session (--max-old-space-size)
    viewport_width: int = Field(1280, ge=320, le=3840)
    viewport_height: int = Field(720, ge=240, le=2160)
    # Private networks the browser may reach (intranet, local test pages); metadata addresses
    # stay refused whatever is listed. web.allowed_private_networks applies too.
    allowed_private_networks: list[str] = Field(default_factory=list)
    snapshot_max_chars: int = Field(20000, ge=1000, le=200000)
    text_max_chars: int = Field(20000, ge=1000, le=500000)
    max_download_bytes: PositiveInt = 50 * 1024 * 1024
    live_view: bool = True  # stream the page to the chat while a browser tool runs
    frame_interval_ms: int = Field(500, ge=100, le=10000)  # at most one live frame per interval

    @field_validator("allowed_private_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return check_networks(value)
