"""Chat ergonomics (issue 26) in a real browser, desktop and 375 px: the working line before
the first token, following the stream (and not when the reader scrolled up), the file viewer
(PDF framed, DOCX and XLSX through their conversion, CSV as a table, images, Markdown raw
and rendered, delete with a styled dialog), the per-thread mode, the phone layout and the
keyboard-only paths."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.support.documents import one_page_pdf
from tests.support.waiting import HANG_SECONDS
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AT_BOTTOM = "(() => { const c = document.getElementById('conversation'); return c.scrollHeight - c.scrollTop - c.clientHeight; })()"
NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"


def assistant(page):
    return page.locator("article.msg.assistant")


def table(rows: int, tag: str) -> str:
    return "| n | item |\n|---|---|\n" + "".join(f"| {i} | {tag} row {i} |\n" for i in range(rows))


def idle(page) -> None:
    expect(page.get_by_role("button", name="Send")).to_be_visible()


# ------------------------------------------------------------------ working state


@pytest.mark.parametrize("device", ["page", "phone"])
def test_the_working_line_shows_until_the_first_token(device, request, script, doc_shot):
    page = request.getfixturevalue(device)
    script(Reply(text="Here is the late answer.", delay=3))
    page.goto("/")
    send(page, "Answer slowly")
    working = page.locator(".working")
    expect(working).to_be_visible()
    expect(working).to_contain_text("Thinking…")
    expect(working.locator(".working-time")).to_have_text(re.compile(r"^\d+s$"))
    assert assistant(page).count() == 0  # nothing had arrived while it showed
    doc_shot(page, "chat-working" + ("-phone" if device == "phone" else ""))
    expect(assistant(page).last).to_contain_text("Here is the late answer.")
    expect(working).to_have_count(0)
    assert page.evaluate(NO_SIDEWAYS)
    assert page.js_errors == []


# ------------------------------------------------------------------ following the stream


def test_follows_a_table_that_arrives_at_once_and_stops_when_the_reader_scrolls_up(page, script):
    # One chunk: the whole table lands in one render, a screen or more at once.
    script(Reply(text="Intro.\n\n" + table(60, "first"), chunk_size=100_000))
    page.goto("/")
    send(page, "A long table please")
    expect(assistant(page).last.locator("td").last).to_have_text("first row 59")
    idle(page)
    assert page.evaluate(AT_BOTTOM) <= 48
    expect(page.get_by_role("button", name="Jump to the latest message")).to_be_hidden()

    script(tool_reply(call("bash", command="sleep 3; echo ready", description="Get ready")),
           Reply(text="Second.\n\n" + table(60, "second"), chunk_size=100_000))
    send(page, "Another one")
    expect(page.locator(".tool-card").last).to_have_attribute("data-status", "running")
    page.locator("#conversation").hover()
    page.mouse.wheel(0, -1500)  # the reader goes back up to read the first table
    jump = page.get_by_role("button", name="Jump to the latest message")
    expect(jump).to_be_visible()
    expect(assistant(page).last.locator("td").last).to_have_text("second row 59")
    idle(page)
    assert page.evaluate(AT_BOTTOM) > 300  # the answer did not drag the reader down
    jump.click()
    expect(jump).to_be_hidden()
    assert page.evaluate(AT_BOTTOM) <= 48
    assert page.js_errors == []


# ------------------------------------------------------------------ the file viewer


def make_docx(heading: str, body: str) -> bytes:
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{ns}"><w:body>'
                f'<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>{heading}</w:t></w:r></w:p>'
                f'<w:p><w:r><w:t>{body}</w:t></w:r></w:p></w:body></w:document>')
    styles = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="{ns}">'
              '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style></w:styles>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/>'
                   '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
                   '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/></Types>')
        z.writestr("_rels/.rels", '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
        z.writestr("word/_rels/document.xml.rels", '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>')
        z.writestr("word/document.xml", document)
        z.writestr("word/styles.xml", styles)
    return buf.getvalue()


def make_xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["region", "sales"])
    sheet.append(["north", 120])
    sheet.append(["south", 95])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def make_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 24), (47, 111, 237)).save(buf, format="PNG")
    return buf.getvalue()


FILES = [
    {"name": "brief.pdf", "mimeType": "application/pdf", "buffer": one_page_pdf("Quarterly brief")},
    {"name": "minutes.docx", "mimeType": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "buffer": make_docx("Meeting minutes", "The budget was approved.")},
    {"name": "sales.xlsx", "mimeType": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "buffer": make_xlsx()},
    {"name": "prices.csv", "mimeType": "text/csv", "buffer": b'fruit,price,note\napple,1.20,"crisp, red"\npear,0.90,soft\n'},
    {"name": "chart.png", "mimeType": "image/png", "buffer": make_png()},
    {"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# Notes\n\nSome **bold** words.\n"},
]


def open_upload(page, name: str):
    page.locator("#upload-list").get_by_role("button", name=f"Open {name}", exact=True).click()
    viewer = page.get_by_role("complementary", name=name)
    expect(viewer).to_be_visible()
    return viewer


def close(viewer):
    viewer.get_by_role("button", name="Close the viewer").click()
    expect(viewer).to_be_hidden()


@pytest.mark.parametrize("device", ["page", "phone"])
def test_the_viewer_shows_pdf_docx_xlsx_csv_images_and_markdown(device, request, doc_shot):
    page = request.getfixturevalue(device)
    page.goto("/")
    page.locator("#file-input").set_input_files(FILES)
    expect(page.locator(".attachment.done")).to_have_count(len(FILES))
    page.get_by_role("button", name="Files", exact=True).click()
    uploads = page.locator("#upload-list")
    # converted companions sit under their original, not in the list beside it
    expect(uploads.get_by_role("button", name="Open minutes.docx.md")).to_be_visible()
    expect(uploads.locator(":scope > li")).to_have_count(len(FILES))

    viewer = open_upload(page, "brief.pdf")
    frame = viewer.locator("iframe")
    expect(frame).to_have_attribute("src", re.compile(r"/artifacts/mnt/user-data/uploads/brief\.pdf$"))
    # A refused frame (X-Frame-Options: DENY) becomes a cross-origin error page: reading its
    # location throws. An allowed one is our own document at the file's URL.
    page.wait_for_function("""f => { try { return f.contentWindow.location.href.endsWith('/brief.pdf'); } catch (e) { return false; } }""",
                           arg=frame.element_handle())
    assert "chrome-error" not in frame.element_handle().content_frame().url
    if device == "phone":
        box = viewer.bounding_box()
        assert box["width"] == 375 and box["x"] == 0  # full screen on a phone
    close(viewer)

    viewer = open_upload(page, "minutes.docx")
    expect(viewer.get_by_role("heading", name="Meeting minutes")).to_be_visible()
    expect(viewer).to_contain_text("The budget was approved.")
    expect(viewer).to_contain_text("Markdown conversion")
    viewer.get_by_role("button", name="Raw").click()
    expect(viewer.locator("pre.viewer-raw")).to_contain_text("# Meeting minutes")
    close(viewer)

    viewer = open_upload(page, "sales.xlsx")
    expect(viewer.locator("table td").filter(has_text="north")).to_be_visible()
    close(viewer)

    viewer = open_upload(page, "prices.csv")
    expect(viewer.locator("table th")).to_have_text(["fruit", "price", "note"])
    expect(viewer.locator("table tbody tr").first.locator("td")).to_have_text(["apple", "1.20", "crisp, red"])
    close(viewer)

    viewer = open_upload(page, "chart.png")
    image = viewer.get_by_role("img", name="chart.png")
    expect(image).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 40", arg=image.element_handle())
    close(viewer)

    viewer = open_upload(page, "notes.md")
    expect(viewer.locator(".viewer-md strong")).to_have_text("bold")
    expect(viewer.get_by_role("link", name="Open in a new tab")).to_have_attribute("target", "_blank")
    download = viewer.get_by_role("link", name="Download").get_attribute("href")
    assert page.request.get(download).headers["content-disposition"].startswith("attachment")
    if device == "page":
        viewer.get_by_role("button", name="Full width").click()
        expect(viewer).to_have_class(re.compile(r"\bwide\b"))
        assert viewer.bounding_box()["width"] == page.viewport_size["width"]
        viewer.get_by_role("button", name="Full width").click()
    doc_shot(page, "file-viewer" + ("-phone" if device == "phone" else ""))
    assert page.evaluate(NO_SIDEWAYS)
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()

    # delete asks first, in a styled dialog; Cancel keeps the file
    uploads.get_by_role("button", name="Delete minutes.docx").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Delete minutes.docx?")
    dialog.get_by_role("button", name="Cancel").click()
    expect(uploads.get_by_role("button", name="Open minutes.docx", exact=True)).to_be_visible()
    uploads.get_by_role("button", name="Delete minutes.docx").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()
    expect(uploads.get_by_role("button", name="Open minutes.docx", exact=True)).to_have_count(0)
    expect(uploads.get_by_role("button", name="Open minutes.docx.md")).to_have_count(0)  # its companion went too
    assert page.js_errors == []


def test_presented_files_open_in_the_viewer_and_download_all(page, script):
    script(
        tool_reply(call("write_file", description="Write code", path="/mnt/user-data/outputs/hello.py", content="def hello():\n    return 'hi'\n")),
        tool_reply(call("write_file", description="Write data", path="/mnt/user-data/outputs/data.csv", content="a,b\n1,2\n")),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/hello.py", "/mnt/user-data/outputs/data.csv"])),
        Reply(text="Both files are ready."),
    )
    page.goto("/")
    send(page, "Write two files")
    expect(assistant(page).last).to_contain_text("Both files are ready.")
    page.get_by_role("button", name="Open hello.py").click()
    viewer = page.get_by_role("complementary", name="hello.py")
    expect(viewer.locator("pre code.hljs span").first).to_be_visible()  # highlighted
    expect(viewer.locator("pre code")).to_contain_text("return 'hi'")
    href = page.get_by_role("link", name="Download all presented files").get_attribute("href")
    archive = page.request.get(href)
    assert archive.status == 200
    assert sorted(zipfile.ZipFile(io.BytesIO(archive.body())).namelist()) == ["data.csv", "hello.py"]
    page.get_by_role("button", name="Files", exact=True).click()
    expect(page.locator("#download-all")).to_have_attribute("href", href)


# ------------------------------------------------------------------ modes


def test_the_mode_is_kept_per_thread_across_reloads_and_browsers(page, browser, live, signed_in_state, script, model_server):
    mode = page.get_by_label("Mode", exact=True)
    script(Reply(text="Planned."))
    page.goto("/")
    expect(mode).to_have_value("fast")
    mode.select_option("plan")
    expect(page.locator("#mode-hint")).to_contain_text("to-do plan")
    send(page, "Plan my week")
    expect(assistant(page).last).to_contain_text("Planned.")
    assert "Plan mode" in str(model_server.requests[-1]["messages"][0])  # the run really was in plan mode
    thread_url = page.url
    page.reload()
    expect(mode).to_have_value("plan")
    mode.select_option("thinking")
    page.wait_for_load_state("networkidle")

    other = browser.new_context(base_url=live.url, storage_state=signed_in_state)
    try:
        elsewhere = other.new_page()
        elsewhere.goto(thread_url)
        expect(elsewhere.get_by_label("Mode", exact=True)).to_have_value("thinking")
        elsewhere.goto("/")
        expect(elsewhere.get_by_label("Mode", exact=True)).to_have_value("fast")  # a new chat starts fast
    finally:
        other.close()
    assert page.js_errors == []


# ------------------------------------------------------------------ phone and keyboard


def test_the_chat_fits_a_phone(phone, script, doc_shot):
    page = phone
    title = "Please compare these three database engines for a small web shop in great detail with a table"
    script(tool_reply(call("bash", command="echo a-long-running-command-with-a-long-name", description="Run a long command to compare engines")),
           Reply(text="Done.\n\n" + table(5, "engine") + "\n```\n" + "x" * 300 + "\n```\n"))
    page.goto("/")
    send(page, title)
    expect(assistant(page).last).to_contain_text("Done.")
    expect(page.locator("#thread-title")).to_have_text(re.compile(r"^Please compare these three"))
    assert page.evaluate(NO_SIDEWAYS)
    rows = page.evaluate("""() => {
        const kids = [...document.querySelector('.chat-head').children].filter((n) => n.offsetParent !== null);
        return new Set(kids.map((n) => Math.round(n.getBoundingClientRect().top / 8))).size;
    }""")
    assert rows <= 2, f"the header took {rows} rows"
    pill = page.locator(".tool-card .tool-status").first
    expect(pill).to_have_text("done")
    assert page.evaluate("""() => {
        const pill = document.querySelector('.tool-card .tool-status'), card = pill.closest('.tool-card');
        const p = pill.getBoundingClientRect(), c = card.getBoundingClientRect();
        return p.right <= c.right && p.left >= c.left && pill.scrollWidth <= pill.clientWidth + 1;
    }"""), "the status pill is clipped"
    expect(page.get_by_label("Mode", exact=True)).to_be_in_viewport()
    doc_shot(page, "chat-phone")


def test_keyboard_only_send_open_a_file_and_stop(page, script):
    script(
        tool_reply(call("write_file", description="Write notes", path="/mnt/user-data/outputs/notes.md", content="# Kept notes\n")),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/notes.md"])),
        Reply(text="Notes written."),
    )
    page.goto("/")
    expect(page.get_by_label("Message", exact=True)).to_be_focused()  # the composer has the focus on arrival
    page.keyboard.type("Write my notes")
    page.keyboard.press("Enter")
    expect(assistant(page).last).to_contain_text("Notes written.")
    idle(page)

    # open the presented file: Shift+Tab back from the composer until it has the focus
    page.get_by_label("Message", exact=True).focus()
    for _ in range(60):
        page.keyboard.press("Shift+Tab")
        if page.evaluate("document.activeElement.classList.contains('presented-file')"):
            break
    else:
        pytest.fail("the presented file is not reachable with the keyboard")
    page.keyboard.press("Enter")
    viewer = page.get_by_role("complementary", name="notes.md")
    expect(viewer.get_by_role("heading", name="Kept notes")).to_be_visible()
    expect(viewer.get_by_role("button", name="Close the viewer")).to_be_focused()
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()
    assert page.evaluate("document.activeElement.classList.contains('presented-file')")  # focus came back

    # stop with Tab + Enter on the Stop button
    script(Reply(text="This comes too late.", delay=HANG_SECONDS))
    page.get_by_label("Message", exact=True).focus()
    page.keyboard.type("Now take your time")
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Stop")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".run-stopped")).to_contain_text("Stopped")
    idle(page)
    assert "too late" not in page.locator("#messages").inner_text()


# ------------------------------------------------------------------ dark theme


DARKNESS = """sel => {
    const [r, g, b] = getComputedStyle(document.querySelector(sel)).backgroundColor.match(/\\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 375, "height": 740}], ids=["desktop", "phone"])
def test_the_dark_theme_covers_the_viewer_and_the_mode_bar(viewport, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme="dark", viewport=viewport)
    suffix = "-phone" if viewport["width"] == 375 else ""
    try:
        page = context.new_page()
        script(Reply(text="A dark answer with a table:\n\n" + table(4, "dark")))
        page.goto("/")
        send(page, "Show me the dark theme")
        expect(assistant(page).last.locator("td").last).to_have_text("dark row 3")
        assert page.evaluate(DARKNESS, "#mode") < 0.3
        doc_shot(page, "chat-dark" + suffix)
        page.locator("#file-input").set_input_files([FILES[3]])
        expect(page.locator(".attachment.done")).to_have_count(1)
        page.get_by_role("button", name="Files", exact=True).click()
        viewer = open_upload(page, FILES[3]["name"])
        expect(viewer.locator("table th").first).to_have_text("fruit")
        assert page.evaluate(DARKNESS, "#viewer") < 0.3 and page.evaluate(DARKNESS, ".viewer-table th") < 0.3
        assert page.evaluate(NO_SIDEWAYS)
        doc_shot(page, "file-viewer-dark" + suffix)
    finally:
        context.close()


# ------------------------------------------------------------------ the model picker


def test_unavailable_models_are_greyed_with_their_reason(page, live):
    original = live.config_path.read_text()
    broken = ("  - name: cloud\n    display_name: Cloud model\n    use: langchain_openai:ChatOpenAI\n"
              "    model: gpt-4o\n    api_key: $DEERFLOW_UI_UNSET_KEY\n")
    try:
        live.config_path.write_text(original.replace("models:\n", "models:\n" + broken, 1))
        page.goto("/")
        option = page.locator("#model option[value='cloud']")
        expect(option).to_be_disabled()
        expect(option).to_contain_text("unavailable:")
        expect(option).to_contain_text("DEERFLOW_UI_UNSET_KEY")
        expect(page.get_by_label("Model")).to_have_value("loopback")  # the usable one is picked
        expect(page.get_by_role("alert")).to_have_count(0)  # one model works: no notice
        # only the broken one left: "no model is available" and why, not "not configured"
        live.config_path.write_text("config_version: 1\nmodels:\n" + broken + "sandbox:\n  use: local\n")
        page.goto("/")
        notice = page.get_by_role("alert")
        expect(notice.get_by_role("heading")).to_have_text("No model is available")
        expect(notice).to_contain_text("DEERFLOW_UI_UNSET_KEY")
        expect(notice).to_contain_text(str(live.config_path))  # this user is staff
    finally:
        live.config_path.write_text(original)
