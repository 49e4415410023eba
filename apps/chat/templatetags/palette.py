"""``{% command_palette %}``: the command palette (Ctrl/Cmd+K) on every signed-in page.

The page carries what the palette offers without a request: the pages this user can reach
(the Settings hub's sections, staff-only ones for staff, and the other destinations of the
top bar and the chat sidebar) and the agents they can talk to. Chats are searched when the
palette opens, through the thread search API (static/site/palette.js).
"""

from __future__ import annotations

from django import template
from django.urls import Resolver404, resolve

from apps.accounts.settings_hub import sections_for
from apps.agents.selectors import agent_picker_list

register = template.Library()

# (label, path, icon, staff only): the destinations besides the settings pages, as the chat
# sidebar's foot lists them.
DESTINATIONS = [
    ("Chat", "/", "message-square", False),
    ("Schedules", "/schedules/", "calendar-clock", False),
    ("Approvals", "/approvals/", "list-checks", False),
    ("Usage", "/usage/", "chart-column", False),
    ("Console", "/console/", "monitor", True),
    ("Observability", "/observability/", "chart-column", True),
    ("Admin", "/admin/", "shield-check", True),
]


def _resolves(path: str) -> bool:
    try:
        resolve(path.split("#", 1)[0])
        return True
    except Resolver404:
        return False


def palette_pages(user) -> list[dict]:
    """Every page this user can open from the palette, in the order the palette lists them."""
    pages = [{"label": label, "path": path, "icon": icon, "group": "Go to"}
             for label, path, icon, staff_only in DESTINATIONS if (user.is_staff or not staff_only) and _resolves(path)]
    pages.append({"label": "Settings", "path": "/settings/", "icon": "settings", "group": "Settings"})
    for section in sections_for(user):
        path = section.path or f"/settings/#section-{section.key}"
        pages.append({"label": f"Settings: {section.title}", "path": path, "icon": section.icon, "group": "Settings"})
    return pages


@register.inclusion_tag("site/_palette.html", takes_context=True)
def command_palette(context):
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"show": False}
    data = {
        "pages": palette_pages(user),
        "agents": [{"id": "lead_agent", "label": "DeerFlow", "mark": ""}] + [
            {"id": a["assistant_id"], "label": a["display_name"] + ("" if a["editable"] else f" ({a['owner']})"), "mark": a["avatar"] or ""}
            for a in agent_picker_list(user=user)],
        "csrf": str(context.get("csrf_token") or ""),
    }
    return {"show": True, "palette": data}
