"""Scaffold a skill folder: init_skill.py NAME --description TEXT [--dir DIR]."""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skill_format import NAME  # noqa: E402

TEMPLATE = """---
name: {name}
description: {description}
version: "0.1"
---
# {title}

## When to use
{description}

## Steps
1. Read the user's inputs (uploads are in /mnt/user-data/uploads).
2. Run `python3 /mnt/skills/custom/{name}/scripts/run.py --help` to see what the script does.
3. Write results to /mnt/user-data/outputs and present them with `present_files`.
"""

SCRIPT = '''"""The {name} skill's script."""

import argparse


def main():
    parser = argparse.ArgumentParser(description="{description}")
    parser.parse_args()
    print("{name}: replace this with the skill's work")


if __name__ == "__main__":
    main()
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name")
    parser.add_argument("--description", required=True)
    parser.add_argument("--dir", default=".")
    args = parser.parse_args()
    if not NAME.match(args.name):
        sys.exit("error: the name must be 1-64 lowercase letters, digits or '-'")
    folder = Path(args.dir) / args.name
    if folder.exists():
        sys.exit(f"error: {folder} already exists")
    (folder / "scripts").mkdir(parents=True)
    description = " ".join(args.description.split()).replace('"', "'")
    (folder / "SKILL.md").write_text(TEMPLATE.format(name=args.name, description=description, title=args.name.replace("-", " ").title()))
    (folder / "scripts" / "run.py").write_text(SCRIPT.format(name=args.name, description=description))
    print(f"created {folder}/SKILL.md and {folder}/scripts/run.py")


if __name__ == "__main__":
    main()
