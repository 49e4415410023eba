"""Check a Markdown report's numbered citations: check_citations.py REPORT.md

Every [n] in the text needs a numbered entry n under '## Sources' with a link, and every
source should be cited. Prints OK or the problems (exit code 1)."""

import re
import sys
from pathlib import Path


def check(text):
    parts = re.split(r"^#{1,6}\s+(?:Sources|References)\s*$", text, flags=re.MULTILINE | re.IGNORECASE)
    if len(parts) < 2:
        return ["no '## Sources' section"]
    body, sources = parts[0], parts[-1]
    cited = {int(n) for n in re.findall(r"\[(\d{1,3})\](?!\()", body)}
    listed = {}
    for number, line in re.findall(r"^\s*(\d{1,3})[.)]\s+(.*)$", sources, flags=re.MULTILINE):
        listed[int(number)] = line
    problems = []
    for n in sorted(cited - set(listed)):
        problems.append(f"[{n}] is cited but not listed under Sources")
    for n in sorted(set(listed) - cited):
        problems.append(f"source {n} is listed but never cited")
    for n, line in sorted(listed.items()):
        if not re.search(r"https?://\S+", line):
            problems.append(f"source {n} has no URL")
    if not cited:
        problems.append("the report cites no sources")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_citations.py REPORT.md")
    problems = check(Path(sys.argv[1]).read_text(encoding="utf-8"))
    for p in problems:
        print(f"problem: {p}")
    print("OK" if not problems else f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)
