"""The chat workspace in a real browser: sign in, stream, tool cards, clarification, plan
todos, stop, reload mid-run, unsafe content, the no-model notice and the phone layout."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.support.waiting import HANG_SECONDS, wait_until
from tests.ui.chat_page import open_details, send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def assistant(page):
    return page.locator("article.msg.assistant")


def test_sign_in_from_the_landing_page_and_see_the_welcome(anon_page, live):
    page = anon_page
    page.goto("/")
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Username or email").fill("tester")
    page.get_by_label("Password").fill("pw-ui-tester-123")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="What can I help with?")).to_be_visible()
    expect(page.get_by_text("Signed in as")).to_contain_text("tester")
    expect(page.get_by_role("link", name="Admin")).to_be_visible()  # staff only
    expect(page.get_by_label("Model")).to_have_value("loopback")
    # an example prompt fills the composer
    page.get_by_role("listitem").filter(has_text="Plan a three-day trip").click()
    box = page.get_by_label("Message", exact=True)
    expect(box).to_have_value(re.compile("three-day trip"))
    # Shift+Enter is a new line, not a send
    box.press("End")
    box.press("Shift+Enter")
    box.type("second line")
    expect(box).to_have_value(re.compile("three-day trip.*\nsecond line", re.S))
    expect(page.locator("article.msg")).to_have_count(0)
    assert page.js_errors == []


def test_send_a_message_and_see_the_streamed_answer(page, script, doc_shot):
    script(Reply(text="Here is **bold** text and a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint('hi')\n```\n", chunk_size=4))
    page.goto("/")
    send(page, "Say something in *markdown*")
    # the user's text is shown as typed, not as markup
    expect(page.locator("article.msg.user .bubble")).to_have_text("Say something in *markdown*")
    answer = assistant(page).last
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("table td").first).to_have_text("1")
    expect(answer.get_by_role("button", name="Copy code")).to_be_visible()
    expect(answer.locator("pre code")).to_contain_text("print('hi')")
    expect(answer.locator("pre code.hljs span").first).to_be_visible()  # highlighted
    # the thread got a URL, a title and a place in the sidebar
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    # the title is the user's words without the markdown markers
    expect(page.locator("#thread-title")).to_have_text("Say something in markdown")
    expect(page.locator(".thread-item.active")).to_contain_text("Say something in markdown")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    # a reload shows the same history once
    page.reload()
    expect(assistant(page).locator("strong")).to_have_text("bold")
    expect(page.locator("article.msg.user")).to_have_count(1)
    expect(assistant(page)).to_have_count(1)
    assert page.js_errors == []


def test_a_new_chats_socket_opens_with_the_page_and_its_first_message_creates_the_thread(page, script):
    script(Reply(text="Created and answered in one step."))
    posts, sockets = [], []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.on("websocket", lambda ws: sockets.append(ws.url))
    # The socket opens as the page loads, for an id the page made up: nothing exists yet.
    with page.expect_websocket() as opened:
        page.goto("/")
    match = re.search(r"/ws/threads/([0-9a-f-]{36})/\?new=1$", opened.value.url)
    assert match, opened.value.url
    thread_id = match.group(1)
    expect(page).to_have_url(re.compile(r"/$"))
    send(page, "Create me with my first message")
    expect(page).to_have_url(re.compile(f"/c/{thread_id}/$"))
    expect(assistant(page).last).to_contain_text("Created and answered in one step.")
    # Listed once its run streams, under the id the socket was opened for.
    expect(page.locator(f'.thread-item[data-thread="{thread_id}"]')).to_have_count(1)
    # One socket, and no thread created over HTTP: the run message carried the thread.
    assert sockets == [opened.value.url]
    assert not [url for url in posts if url.rstrip("/").endswith("/api/threads")], posts
    assert page.js_errors == []


def test_reasoning_is_shown_collapsed(page, script):
    script(Reply(text="The answer is 42.", reasoning="Let me think about life, the universe and everything."))
    page.goto("/")
    page.get_by_label("Mode", exact=True).select_option("thinking")
    send(page, "What is the answer?")
    answer = assistant(page).last
    expect(answer).to_contain_text("The answer is 42.")
    thinking = answer.locator("details.reasoning")
    expect(thinking).to_be_visible()
    expect(thinking.locator(".reasoning-body")).to_be_hidden()
    open_details(thinking)
    expect(thinking.locator(".reasoning-body")).to_contain_text("life, the universe and everything")


def test_tool_card_shows_name_status_and_result(page, script, doc_shot):
    script(
        tool_reply(call("bash", command="echo hello-from-the-sandbox", description="Print a greeting"), text="Let me run a command."),
        Reply(text="The command printed the greeting."),
    )
    page.goto("/")
    send(page, "Run a command")
    card = page.locator(".tool-card").first
    expect(card).to_have_attribute("data-status", "success")
    expect(card.locator(".tool-name")).to_contain_text("bash")
    expect(card.locator(".tool-args-summary")).to_have_text("Print a greeting")
    expect(assistant(page).last).to_contain_text("The command printed the greeting.")
    open_details(card)
    expect(card.locator(".tool-result")).to_contain_text("hello-from-the-sandbox")
    expect(card.locator(".tool-args")).to_contain_text('"command": "echo hello-from-the-sandbox"')
    doc_shot(page, "tool-card-expanded")


def test_answer_a_clarification_and_the_run_resumes(page, script, doc_shot):
    script(
        tool_reply(call("ask_clarification", question="Which colour should the chart use?", options=["red", "blue"])),
        Reply(text="Drawing it in blue."),
    )
    page.goto("/")
    send(page, "Draw a chart")
    card = page.locator("#clarify")
    expect(card).to_contain_text("Which colour should the chart use?")
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    doc_shot(page, "clarification-card")
    card.get_by_label("blue").check()
    card.get_by_role("button", name="Send answer").click()
    expect(assistant(page).last).to_contain_text("Drawing it in blue.")
    expect(page.locator(".clarify.answered")).to_contain_text("You answered: blue")


def test_a_clarification_form_sends_its_field_values(page, script, model_server):
    fields = [
        {"name": "city", "label": "City", "type": "text", "required": True},
        {"name": "nights", "label": "Nights", "type": "number"},
        {"name": "pace", "label": "Pace", "type": "select", "options": ["relaxed", "busy"]},
        {"name": "museums", "label": "Include museums", "type": "checkbox"},
    ]
    script(tool_reply(call("ask_clarification", question="Trip details?", fields=fields)), Reply(text="Planning your trip."))
    page.goto("/")
    send(page, "Plan a trip")
    card = page.locator("#clarify")
    expect(card).to_contain_text("Trip details?")
    card.get_by_role("button", name="Send answer").click()  # City is required: the browser holds the form back
    expect(page.locator(".clarify.answered")).to_have_count(0)
    card.get_by_label("City *").fill("Lisbon")
    card.get_by_label("Nights").fill("3")
    card.get_by_label("Pace").select_option("busy")
    card.get_by_label("Include museums").check()
    card.get_by_role("button", name="Send answer").click()
    expect(assistant(page).last).to_contain_text("Planning your trip.")
    answer = str(model_server.requests[-1]["messages"])
    assert "City: Lisbon" in answer and "Nights: 3" in answer and "Pace: busy" in answer and "Include museums: True" in answer


def test_an_interrupted_thread_shows_its_question_after_a_reload(page, script):
    script(tool_reply(call("ask_clarification", question="Who is the audience?")), Reply(text="Writing for engineers."))
    page.goto("/")
    send(page, "Write an intro")
    expect(page.locator("#clarify")).to_contain_text("Who is the audience?")
    page.reload()
    card = page.locator("#clarify")
    expect(card).to_contain_text("Who is the audience?")
    # typing in the composer answers the question
    send(page, "engineers")
    expect(assistant(page).last).to_contain_text("Writing for engineers.")


def test_plan_mode_todos_appear_and_update(page, script):
    script(
        tool_reply(call("write_todos", todos=[{"content": "Collect sources", "status": "in_progress"}, {"content": "Write summary", "status": "pending"}])),
        tool_reply(call("write_todos", todos=[{"content": "Collect sources", "status": "completed"}, {"content": "Write summary", "status": "in_progress"}])),
        Reply(text="Plan done."),
    )
    page.goto("/")
    page.get_by_label("Mode", exact=True).select_option("plan")
    send(page, "Research something")
    todos = page.get_by_role("region", name="Plan")
    expect(todos.locator(".todo")).to_have_count(2)
    expect(todos.locator(".todo").first).to_have_attribute("data-status", "completed")
    expect(todos.locator(".todo").nth(1)).to_have_attribute("data-status", "in_progress")
    expect(todos).to_contain_text("1/2")
    expect(assistant(page).last).to_contain_text("Plan done.")


def test_a_long_chat_opens_at_its_end_and_loads_earlier_messages(page, script):
    # 26 plan steps: 54 messages, more than the 50 a chat opens with
    steps = [tool_reply(call("write_todos", todos=[{"content": f"Step {i}", "status": "in_progress"}])) for i in range(26)]
    script(*steps, Reply(text="All steps done."))
    page.goto("/")
    page.get_by_label("Mode", exact=True).select_option("plan")
    send(page, "Work through the steps")
    expect(assistant(page).last).to_contain_text("All steps done.")

    page.reload()
    expect(assistant(page).last).to_contain_text("All steps done.")
    messages = page.locator("#messages article.msg")
    expect(messages.first).not_to_have_class(re.compile("user"))  # the question is on the earlier page
    earlier = page.get_by_role("button", name="Load earlier")
    expect(earlier).to_be_visible()
    earlier.click()
    expect(messages.first).to_have_class(re.compile("user"))
    expect(messages.first.locator(".bubble")).to_have_text("Work through the steps")
    expect(page.locator("article.msg.user")).to_have_count(1)  # prepended once, nothing repeated
    expect(earlier).to_be_hidden()
    assert page.js_errors == []


def test_stop_a_slow_run(page, script, model_server):
    script(Reply(text="This answer comes too late.", delay=HANG_SECONDS))
    page.goto("/")
    send(page, "Take your time")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    wait_until(lambda: model_server.requests, "the run's model request")  # stopped mid-answer, not before it began
    page.keyboard.press("Escape")  # Esc stops, like the button
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.locator(".thread-item.active")).not_to_have_class(re.compile("busy"))
    assert "comes too late" not in page.locator("#messages").inner_text()


def test_reload_mid_run_and_see_the_run_finish(page, script, doc_shot):
    script(
        tool_reply(call("bash", command="sleep 3; echo slept", description="Wait three seconds"), text="Working on it: first I **wait**."),
        Reply(text="Finished after the wait."),
    )
    page.goto("/")
    send(page, "Do something slow")
    expect(page.locator(".tool-card")).to_have_attribute("data-status", "running")
    doc_shot(page, "chat-mid-stream")
    page.reload()
    expect(assistant(page).last).to_contain_text("Finished after the wait.")
    expect(page.locator(".tool-card")).to_have_attribute("data-status", "success")
    # nothing doubled by the history + replay
    text = page.locator("#messages").inner_text()
    assert text.count("Working on it") == 1
    assert text.count("Finished after the wait.") == 1
    expect(page.locator("article.msg.user")).to_have_count(1)


def test_html_in_messages_is_text_never_code(page, script):
    script(Reply(text='Reply with <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script> [link](javascript:alert(1)) [docs](https://example.com/docs)'))
    page.goto("/")
    send(page, '<img src=x onerror="window.__pwned=3">')
    expect(page.locator("article.msg.user .bubble")).to_have_text('<img src=x onerror="window.__pwned=3">')
    answer = assistant(page).last
    expect(answer).to_contain_text("<script>window.__pwned=2</script>")
    assert page.evaluate("window.__pwned") is None
    assert answer.locator("img, script").count() == 0
    assert answer.locator("a[href^='javascript']").count() == 0
    docs = answer.get_by_role("link", name="docs")
    expect(docs).to_have_attribute("target", "_blank")
    expect(docs).to_have_attribute("rel", re.compile("noopener"))


def test_a_message_while_a_run_is_active_is_queued(page, script):
    script(Reply(text="First answer.", delay=2), Reply(text="Second answer."))
    page.goto("/")
    send(page, "first")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    send(page, "second")
    expect(page.locator("#composer-note")).to_contain_text("Queued 1 message")
    expect(assistant(page).last).to_contain_text("Second answer.")
    expect(page.locator("article.msg.user")).to_have_count(2)


def test_rename_search_and_delete_threads(page, script):
    script(Reply(text="ok"))
    page.goto("/")
    send(page, "Thread to rename")
    expect(assistant(page).last).to_contain_text("ok")
    item = page.locator(".thread-item.active")
    item.get_by_role("button", name=re.compile("^Rename")).click()
    page.get_by_label("New title").fill("Renamed <b>thread</b>")
    page.get_by_label("New title").press("Enter")
    expect(page.locator("#thread-title")).to_have_text("Renamed <b>thread</b>")
    page.reload()
    expect(page.locator("#thread-title")).to_have_text("Renamed <b>thread</b>")
    page.get_by_label("Search chats").fill("renamed <b>")
    expect(page.locator(".thread-item")).to_have_count(1)
    page.get_by_label("Search chats").fill("no such chat zzz")
    expect(page.get_by_text("No chat matches.")).to_be_visible()
    page.get_by_label("Search chats").fill("")
    page.locator(".thread-item.active").get_by_role("button", name=re.compile("^Delete")).click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_text("Renamed <b>thread</b>")).to_have_count(0)


def test_phone_layout(phone, script, doc_shot):
    page = phone
    script(Reply(text="A short answer that fits on a phone."))
    page.goto("/")
    expect(page.get_by_role("heading", name="What can I help with?")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    # the sidebar is a drawer
    new_chat = page.locator("#new-chat")
    expect(new_chat).to_be_hidden()
    page.get_by_role("button", name="Show chats").click()
    expect(new_chat).to_be_in_viewport()
    page.get_by_role("button", name="Hide chats").click()
    expect(new_chat).to_be_hidden()
    # the header keeps every control on screen
    for control in (page.get_by_label("Model"), page.get_by_label("Mode", exact=True), page.get_by_role("button", name="Files", exact=True)):
        expect(control).to_be_in_viewport()
    send(page, "Hello from a phone")
    expect(assistant(page).last).to_contain_text("fits on a phone")
    expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(page, "phone-layout")


def test_no_model_notice(page, live):
    original = live.config_path.read_text()
    live.config_path.write_text("config_version: 1\nmodels: []\nsandbox:\n  use: local\n")
    try:
        page.goto("/")
        notice = page.get_by_role("alert")
        expect(notice).to_contain_text("No model is configured")
        expect(notice).to_contain_text(str(live.config_path))
        expect(notice).to_contain_text("DEER_FLOW_CONFIG_PATH")
        expect(page.get_by_label("Message", exact=True)).to_be_disabled()
        expect(page.get_by_role("button", name="Send")).to_be_disabled()
    finally:
        live.config_path.write_text(original)


def test_a_dropped_connection_reconnects_and_resumes_without_duplicates(page, script):
    script(
        tool_reply(call("bash", command="sleep 2; echo done", description="Wait two seconds"), text="Starting the slow part."),
        Reply(text="All finished after the reconnect."),
    )
    page.goto("/")
    send(page, "Slow work please")
    expect(page.locator(".tool-card")).to_have_attribute("data-status", "running")
    seen = page.evaluate("window.DeerFlowChat.state().lastEventId")
    assert seen
    page.evaluate("window.DeerFlowChat.dropConnection()")
    expect(page.get_by_role("status")).to_contain_text("reconnecting")
    expect(page.locator("article.msg.assistant").last).to_contain_text("All finished after the reconnect.")
    expect(page.get_by_role("status")).to_be_hidden()
    text = page.locator("#messages").inner_text()
    assert text.count("Starting the slow part.") == 1
    assert text.count("All finished after the reconnect.") == 1


BRIGHTNESS = """sel => {
    const [r, g, b] = getComputedStyle(document.querySelector(sel)).backgroundColor.match(/\\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 375, "height": 740}], ids=["desktop", "phone"])
def test_an_empty_answer_fails_the_run_and_offers_a_retry(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    try:
        page = context.new_page()
        js_errors: list[str] = []
        page.on("pageerror", lambda exc: js_errors.append(str(exc)))
        script(Reply(text=""), Reply(text=""), Reply(text="Second try worked."))
        page.goto("/")
        send(page, "Answer me, please")
        error = page.get_by_role("alert")
        expect(error).to_contain_text("empty answer")
        expect(page.get_by_role("button", name="Send")).to_be_visible()  # the run is over
        # the failed turn keeps its retry after a reload (the run is an error, the notice marked)
        page.reload()
        failed = assistant(page).last
        expect(failed).to_contain_text("empty answer")
        expect(failed.get_by_role("alert")).to_contain_text("This turn failed")
        brightness = page.evaluate(BRIGHTNESS, "article.msg.assistant .run-error")
        assert brightness < 0.35 if scheme == "dark" else brightness > 0.6
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        doc_shot(page, "chat-failed-answer" + ("-phone" if viewport["width"] == 375 else "") + ("-dark" if scheme == "dark" else ""))
        failed.get_by_role("button", name="Retry").click()
        expect(assistant(page).last).to_contain_text("Second try worked.")
        expect(page.get_by_role("alert")).to_have_count(0)
        expect(page.locator("article.msg.user")).to_have_count(2)
        assert js_errors == []
    finally:
        context.close()


def test_a_failed_run_shows_the_error_inline_with_retry(page, script):
    script(Reply(status=400, error_message="provider refused the request"), Reply(text="Second try worked."))
    page.goto("/")
    send(page, "Try something")
    error = page.get_by_role("alert")
    expect(error).to_be_visible()
    expect(error).to_contain_text("provider refused the request")
    # The provider's raw words sit behind Details; the line the user reads is plain.
    expect(error.locator(".run-error-text > span")).not_to_contain_text("Error code")
    details = error.locator("details.error-details")
    expect(details.locator("code")).to_be_hidden()
    open_details(details)
    expect(details.locator("code")).to_contain_text("provider refused the request")
    error.get_by_role("button", name="Retry").click()
    expect(page.locator("article.msg.assistant").last).to_contain_text("Second try worked.")
    expect(page.get_by_role("alert")).to_have_count(0)
