"""The Settings hub (``/settings/``): one page whose sections link to each settings page.

Features slot in by adding a ``SettingsSection`` to ``SECTIONS`` (or calling
``register_section`` from their app's ``ready()``). A section names its page by path and is
shown only while that path resolves, so an entry for a page another branch is still
building (Connections) costs nothing until the page exists, and the hub works before and
after it lands.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import Resolver404, resolve


@dataclass(frozen=True)
class SettingsSection:
    key: str            # the anchor and test handle: #section-<key>
    title: str
    description: str
    icon: str           # a name from static/vendor/lucide-icons.js
    path: str = ""      # the section's own page; empty when the hub shows it inline
    staff_only: bool = False
    order: int = 100


SECTIONS: list[SettingsSection] = [
    SettingsSection("account", "Account", "Your name, e-mail address, password and sign-out.", "user", "/accounts/password/change/", order=10),
    SettingsSection("tokens", "Access tokens", "Tokens for scripts and the langgraph-sdk client, with the scopes each may use.", "key-round", "/accounts/tokens/", order=20),
    SettingsSection("connections", "Connections", "Chat with DeerFlow from Telegram, Slack and other apps.", "link", "/settings/connections", order=30),
    SettingsSection("memory", "Memory", "What DeerFlow remembers about you across chats: review, edit, pause or forget it.", "brain", "/memory/", order=40),
    SettingsSection("skills", "Skills", "The skills the agent may use: enable, disable, install your own.", "sparkles", "/skills/", order=50),
    SettingsSection("agents", "Agents", "Custom agents with their own instructions, model and skills.", "bot", "/agents/", order=60),
    SettingsSection("mcp", "MCP servers", "Tool servers the agent connects to (for the whole site).", "plug", "/settings/mcp", staff_only=True, order=70),
    SettingsSection("appearance", "Appearance", "Light, dark, or follow your system. Kept in this browser, for your account.", "sun", order=90),
]


def register_section(section: SettingsSection) -> None:
    """Add a section (replacing one with the same key)."""
    SECTIONS[:] = [s for s in SECTIONS if s.key != section.key] + [section]


def _resolves(path: str) -> bool:
    for candidate in (path, path.rstrip("/") + "/" if not path.endswith("/") else path.rstrip("/")):
        try:
            resolve(candidate)
            return True
        except Resolver404:
            continue
    return False


def sections_for(user) -> list[SettingsSection]:
    """The sections this user sees, in order: staff-only ones for staff, linked ones whose page exists."""
    shown = [s for s in SECTIONS if (user.is_staff or not s.staff_only) and (not s.path or _resolves(s.path))]
    return sorted(shown, key=lambda s: (s.order, s.key))


@login_required
def settings_hub(request):
    return render(request, "settings/hub.html", {"sections": sections_for(request.user)})
