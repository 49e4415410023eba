"""Outline (Markdown) -> PPTX with python-pptx; charts drawn with matplotlib.

build_deck.py OUTLINE.md [--out DIR]"""

import argparse
import re
import sys
import tempfile
from pathlib import Path


def parse(text):
    title, subtitle, slides = None, "", []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# ") and title is None:
            title = line[2:].strip()
        elif line.startswith("## "):
            slides.append({"title": line[3:].strip(), "bullets": [], "chart": None, "image": None})
        elif not slides:
            subtitle = (subtitle + " " + line).strip() if title else subtitle
        elif re.match(r"^[-*+]\s+", line):
            slides[-1]["bullets"].append(re.sub(r"^[-*+]\s+", "", line))
        elif line.lower().startswith("chart:"):
            parts = [p.strip() for p in line[6:].split("|")]
            if len(parts) != 3 or parts[0] not in ("bar", "line", "pie"):
                raise ValueError(f"line {number}: write 'chart: bar|line|pie | title | label=value, ...'")
            try:
                pairs = [(k.strip(), float(v)) for k, v in (item.split("=", 1) for item in parts[2].split(",") if item.strip())]
            except ValueError:
                raise ValueError(f"line {number}: chart values must be label=number") from None
            slides[-1]["chart"] = (parts[0], parts[1], pairs)
        elif line.lower().startswith("image:"):
            slides[-1]["image"] = line[6:].strip()
        else:
            slides[-1]["bullets"].append(line)
    if title is None:
        raise ValueError("the outline needs a '# Title' line")
    if not slides:
        raise ValueError("the outline needs at least one '## Slide' section")
    return title, subtitle, slides


def chart_png(kind, title, pairs, directory):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values = [p[0] for p in pairs], [p[1] for p in pairs]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    if kind == "bar":
        ax.bar(labels, values, color="#2f6fed")
    elif kind == "line":
        ax.plot(labels, values, marker="o", color="#2f6fed")
    else:
        ax.pie(values, labels=labels, autopct="%1.0f%%")
    ax.set_title(title)
    fig.tight_layout()
    path = Path(directory) / f"chart-{len(list(Path(directory).iterdir()))}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def build(title, subtitle, slides, target):
    from pptx import Presentation
    from pptx.util import Inches, Pt

    deck = Presentation()
    deck.slide_width, deck.slide_height = Inches(13.333), Inches(7.5)
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = title
    first.placeholders[1].text = subtitle
    with tempfile.TemporaryDirectory() as tmp:
        for spec in slides:
            slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
            slide.shapes.title.text = spec["title"]
            visual = spec["chart"] or spec["image"]
            width = Inches(6.2) if visual else Inches(12)
            box = slide.shapes.add_textbox(Inches(0.6), Inches(1.7), width, Inches(5)).text_frame
            box.word_wrap = True
            for i, bullet in enumerate(spec["bullets"]):
                para = box.paragraphs[0] if i == 0 else box.add_paragraph()
                para.text = f"• {bullet}"
                para.font.size = Pt(22)
            picture = None
            if spec["chart"]:
                picture = chart_png(*spec["chart"], tmp)
            elif spec["image"]:
                picture = Path(spec["image"])
                if not picture.is_file():
                    raise ValueError(f"slide '{spec['title']}': image {picture} does not exist")
            if picture is not None:
                slide.shapes.add_picture(str(picture), Inches(7.0), Inches(1.7), width=Inches(5.8))
        deck.save(target)
    return len(deck.slides)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("outline")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    source = Path(args.outline)
    if not source.is_file():
        sys.exit(f"error: {source} does not exist")
    try:
        import matplotlib  # noqa: F401
        import pptx  # noqa: F401
    except ImportError as exc:
        sys.exit(f"error: {exc.name} is not installed in the sandbox toolbox (run `make toolbox` on the server)")
    try:
        title, subtitle, slides = parse(source.read_text(encoding="utf-8"))
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{source.stem}.pptx"
        count = build(title, subtitle, slides, target)
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    print(f"wrote {target} ({count} slides)")


if __name__ == "__main__":
    main()
