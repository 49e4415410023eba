"""``{% chat_bundle_url "js" %}``: where the chat page's joined scripts or stylesheets are
(apps/chat/bundles.py), named by their content's digest."""

from __future__ import annotations

from django import template
from django.urls import reverse

from apps.chat import bundles

register = template.Library()


@register.simple_tag
def chat_bundle_url(kind: str) -> str:
    return reverse("chat-bundle", kwargs={"filename": bundles.bundle(kind).filename})
