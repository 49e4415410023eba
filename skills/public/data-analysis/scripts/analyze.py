"""Describe a CSV/TSV/XLSX table and chart its numeric columns as PNG (standard library only).

analyze.py FILE [--out DIR] [--max-rows N]
"""

import argparse
import csv
import re
import statistics
import struct
import sys
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def read_xlsx(path):
    with zipfile.ZipFile(path) as zf:
        shared = []
        if "xl/sharedStrings.xml" in zf.namelist():
            for si in ElementTree.fromstring(zf.read("xl/sharedStrings.xml")).findall("m:si", NS):
                shared.append("".join(t.text or "" for t in si.iter(f"{{{NS['m']}}}t")))
        sheets = sorted(n for n in zf.namelist() if re.match(r"xl/worksheets/sheet\d+\.xml$", n))
        if not sheets:
            raise ValueError("the workbook has no worksheet")
        rows = []
        for row in ElementTree.fromstring(zf.read(sheets[0])).iter(f"{{{NS['m']}}}row"):
            cells = {}
            for c in row.findall("m:c", NS):
                col = re.match(r"[A-Z]+", c.get("r", "A")).group(0)
                index = 0
                for ch in col:
                    index = index * 26 + ord(ch) - 64
                v = c.find("m:v", NS)
                text = v.text if v is not None else "".join(t.text or "" for t in c.iter(f"{{{NS['m']}}}t"))
                if c.get("t") == "s" and text is not None:
                    text = shared[int(text)]
                cells[index - 1] = text or ""
            if cells:
                rows.append([cells.get(i, "") for i in range(max(cells) + 1)])
        return rows


def read_table(path):
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        rows = read_xlsx(path)
    else:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        dialect = csv.excel_tab if suffix == ".tsv" else csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
        rows = [r for r in csv.reader(text.splitlines(), dialect) if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise ValueError("the table needs a header row and at least one data row")
    header = [h.strip() or f"column{i + 1}" for i, h in enumerate(rows[0])]
    data = [r + [""] * (len(header) - len(r)) for r in rows[1:]]
    return header, data


def number(text):
    try:
        return float(str(text).replace(",", "").strip())
    except ValueError:
        return None


# -- a tiny PNG bar chart ----------------------------------------------------------------


def png(width, height, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3:(y + 1) * width * 3]) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def bar_chart(values, width=640, height=360):
    pixels = bytearray([255] * (width * height * 3))

    def rect(x0, y0, x1, y1, color):
        for y in range(max(0, y0), min(height, y1)):
            row = y * width * 3
            for x in range(max(0, x0), min(width, x1)):
                pixels[row + x * 3:row + x * 3 + 3] = bytes(color)

    margin = 30
    low, high = min(0.0, min(values)), max(0.0, max(values))
    span = (high - low) or 1.0
    zero = height - margin - int((0 - low) / span * (height - 2 * margin))
    rect(margin, margin, margin + 1, height - margin, (90, 90, 90))  # axis
    rect(margin, zero, width - margin, zero + 1, (90, 90, 90))
    slot = (width - 2 * margin) / max(len(values), 1)
    for i, v in enumerate(values):
        x0 = margin + int(i * slot + slot * 0.15)
        x1 = margin + int((i + 1) * slot - slot * 0.15)
        top = height - margin - int((v - low) / span * (height - 2 * margin))
        rect(x0, min(top, zero), max(x1, x0 + 1), max(top, zero) + 1, (47, 111, 237) if v >= 0 else (192, 53, 43))
    return png(width, height, pixels)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--out", default=".")
    parser.add_argument("--max-rows", type=int, default=60)
    args = parser.parse_args()
    path = Path(args.file)
    if not path.is_file():
        sys.exit(f"error: {path} does not exist")
    try:
        header, data = read_table(path)
    except (ValueError, csv.Error, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        sys.exit(f"error: cannot read {path.name}: {exc}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = path.stem
    columns = list(zip(*data))
    labels = None
    lines = [f"# {path.name}", "", f"{len(data)} rows, {len(header)} columns.", ""]
    numeric = []
    for name, cells in zip(header, columns):
        nums = [n for n in (number(c) for c in cells) if n is not None]
        if nums and len(nums) >= 0.8 * len([c for c in cells if str(c).strip()]):
            numeric.append((name, [number(c) or 0.0 for c in cells]))
            sd = statistics.stdev(nums) if len(nums) > 1 else 0.0
            lines.append(f"- **{name}** (numeric): count {len(nums)}, mean {statistics.mean(nums):.4g}, "
                         f"median {statistics.median(nums):.4g}, std {sd:.4g}, min {min(nums):.4g}, max {max(nums):.4g}")
        else:
            top = Counter(str(c).strip() for c in cells if str(c).strip()).most_common(3)
            labels = labels or list(cells)
            lines.append(f"- **{name}** (text): {len(set(cells))} distinct; most frequent: "
                         + ", ".join(f"{v} ({n})" for v, n in top))
    charts = []
    for name, values in numeric:
        safe = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "column"
        target = out / f"{stem}-{safe}.png"
        target.write_bytes(bar_chart(values[: args.max_rows]))
        charts.append(target)
    if charts:
        lines += ["", "## Charts", ""]
        for (name, _), chart in zip(numeric, charts):
            first = f", bars in row order from {labels[0]}" if labels else ""
            lines.append(f"- {name}: {chart.name} (first {min(args.max_rows, len(data))} rows{first})")
    summary = out / f"{stem}-summary.md"
    summary.write_text("\n".join(lines) + "\n")
    print(f"wrote {summary}")
    for chart in charts:
        print(f"wrote {chart}")


if __name__ == "__main__":
    main()
