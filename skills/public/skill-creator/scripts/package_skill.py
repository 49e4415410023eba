"""Validate a skill folder and zip it: package_skill.py FOLDER [--out DIR] -> DIR/NAME.skill."""

import argparse
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skill_format import validate  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    folder = Path(args.folder).resolve()
    errors = validate(folder)
    if errors:
        for error in errors:
            print(f"error: {error}")
        sys.exit("not packaged: fix the errors above")
    out = Path(args.out) / f"{folder.name}.skill"
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith("."):
                zf.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
                count += 1
    print(f"packaged {count} files into {out}")


if __name__ == "__main__":
    main()
