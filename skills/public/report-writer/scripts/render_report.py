"""Markdown -> DOCX (python-docx) and PDF (reportlab): render_report.py REPORT.md [--out DIR]."""

import argparse
import re
import sys
from pathlib import Path

INLINE = re.compile(r"(\*\*[^*]+\*\*|\*[^*]+\*|`[^`]+`)")


def blocks(text):
    """(kind, payload) blocks: heading (level, text), para, bullet, number, code, table."""
    lines = text.splitlines()
    i = 0
    para = []

    def flush():
        if para:
            out.append(("para", " ".join(para)))
            para.clear()

    out = []
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            out.append(("code", "\n".join(code)))
        elif m := re.match(r"^(#{1,6})\s+(.*)$", line):
            flush()
            out.append(("heading", (len(m.group(1)), m.group(2).strip())))
        elif m := re.match(r"^\s*[-*+]\s+(.*)$", line):
            flush()
            out.append(("bullet", m.group(1)))
        elif m := re.match(r"^\s*\d+[.)]\s+(.*)$", line):
            flush()
            out.append(("number", m.group(1)))
        elif line.strip().startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(re.match(r"^:?-{2,}:?$", c) for c in cells):
                    rows.append(cells)
                i += 1
            out.append(("table", rows))
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return out


def runs(text):
    for part in INLINE.split(text):
        if not part:
            continue
        if part.startswith("**"):
            yield part[2:-2], "bold"
        elif part.startswith("`"):
            yield part[1:-1], "code"
        elif part.startswith("*"):
            yield part[1:-1], "italic"
        else:
            yield part, None


def write_docx(parsed, target):
    from docx import Document
    from docx.shared import Pt

    doc = Document()

    def add_runs(paragraph, text):
        for chunk, style in runs(text):
            run = paragraph.add_run(chunk)
            run.bold = style == "bold"
            run.italic = style == "italic"
            if style == "code":
                run.font.name = "Courier New"

    for kind, payload in parsed:
        if kind == "heading":
            level, text = payload
            doc.add_heading(text, level=0 if level == 1 else min(level - 1, 9))
        elif kind == "para":
            add_runs(doc.add_paragraph(), payload)
        elif kind == "bullet":
            add_runs(doc.add_paragraph(style="List Bullet"), payload)
        elif kind == "number":
            add_runs(doc.add_paragraph(style="List Number"), payload)
        elif kind == "code":
            run = doc.add_paragraph().add_run(payload)
            run.font.name = "Courier New"
            run.font.size = Pt(9)
        elif kind == "table" and payload:
            width = max(len(r) for r in payload)
            table = doc.add_table(rows=len(payload), cols=width)
            table.style = "Table Grid"
            for r, cells in enumerate(payload):
                for c, cell in enumerate(cells):
                    table.cell(r, c).text = re.sub(r"[*`]", "", cell)
                    if r == 0:
                        for run in table.cell(r, c).paragraphs[0].runs:
                            run.bold = True
    doc.save(target)


def write_pdf(parsed, target):
    from xml.sax.saxutils import escape

    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import ListFlowable, ListItem, Paragraph, Preformatted, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()

    def markup(text):
        out = []
        for chunk, style in runs(text):
            chunk = escape(chunk)
            out.append({"bold": f"<b>{chunk}</b>", "italic": f"<i>{chunk}</i>", "code": f'<font face="Courier">{chunk}</font>'}.get(style, chunk))
        return "".join(out)

    story = []
    pending = []
    pending_kind = None

    def flush_list():
        nonlocal pending, pending_kind
        if pending:
            story.append(ListFlowable([ListItem(Paragraph(markup(t), styles["BodyText"])) for t in pending],
                                      bulletType="bullet" if pending_kind == "bullet" else "1"))
        pending, pending_kind = [], None

    for kind, payload in parsed:
        if kind in ("bullet", "number"):
            if pending_kind not in (None, kind):
                flush_list()
            pending.append(payload)
            pending_kind = kind
            continue
        flush_list()
        if kind == "heading":
            level, text = payload
            story.append(Paragraph(markup(text), styles["Title" if level == 1 else f"Heading{min(level, 4)}"]))
        elif kind == "para":
            story.append(Paragraph(markup(payload), styles["BodyText"]))
        elif kind == "code":
            story.append(Preformatted(payload, styles["Code"]))
        elif kind == "table" and payload:
            width = max(len(r) for r in payload)
            data = [[Paragraph(markup(c), styles["BodyText"]) for c in r + [""] * (width - len(r))] for r in payload]
            table = Table(data, repeatRows=1)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                                       ("BACKGROUND", (0, 0), (-1, 0), colors.whitesmoke)]))
            story.append(table)
        story.append(Spacer(1, 4))
    flush_list()
    doc = SimpleDocTemplate(str(target), pagesize=A4, title=next((p[1] for k, p in parsed if k == "heading"), target.stem))
    doc.build(story)
    return doc.page


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("markdown")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    source = Path(args.markdown)
    if not source.is_file():
        sys.exit(f"error: {source} does not exist")
    try:
        import docx  # noqa: F401
        import reportlab  # noqa: F401
    except ImportError as exc:
        sys.exit(f"error: {exc.name} is not installed in the sandbox toolbox (run `make toolbox` on the server)")
    parsed = blocks(source.read_text(encoding="utf-8"))
    if not parsed:
        sys.exit(f"error: {source} is empty")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    docx_path, pdf_path = out / f"{source.stem}.docx", out / f"{source.stem}.pdf"
    write_docx(parsed, docx_path)
    pages = write_pdf(parsed, pdf_path)
    print(f"wrote {docx_path}")
    print(f"wrote {pdf_path} ({pages} page{'s' if pages != 1 else ''})")


if __name__ == "__main__":
    main()
