"""Typing into the chat as a user does, once the page can take it."""

from __future__ import annotations

import time

from tests.support.waiting import HANG_SECONDS


def send(page, text: str) -> None:
    # The composer is on the page before the app has loaded the thread and bound its keys: an
    # Enter pressed in between is lost (seen on a busy machine), so wait for the app to say so.
    page.wait_for_function("document.body.dataset.ready === '1'")
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")


def open_details(details, summary: str = ":scope > summary") -> None:
    """Open a <details> card in the chat as a user does: click its summary until it is open.
    The chat keeps moving after an answer ends (it follows its end as the rating, the changed
    files and suggestions arrive), and a click that the page moved between Playwright's hit
    check and the mouse event misses; a user would click again, and so does this."""
    deadline = time.monotonic() + HANG_SECONDS
    while not details.evaluate("d => d.open"):
        assert time.monotonic() < deadline, "the card never opened"
        details.locator(summary).click()
