"""Typing into the chat as a user does, once the page can take it."""

from __future__ import annotations


def send(page, text: str) -> None:
    # The composer is on the page before the app has loaded the thread and bound its keys: an
    # Enter pressed in between is lost (seen on a busy machine), so wait for the app to say so.
    page.wait_for_function("document.body.dataset.ready === '1'")
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")
