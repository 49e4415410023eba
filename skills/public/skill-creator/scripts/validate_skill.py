"""Check a skill folder: validate_skill.py FOLDER. Prints OK or the errors (exit code 1)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skill_format import validate  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: validate_skill.py FOLDER")
    errors = validate(sys.argv[1])
    for error in errors:
        print(f"error: {error}")
    print("OK" if not errors else f"{len(errors)} error(s)")
    sys.exit(1 if errors else 0)
