"""``manage.py config_upgrade [--config PATH] [--dry-run]``: add the sections and keys of
config.example.yaml an older config.yaml lacks and set its config_version, keeping its comments.
The file as it was is kept beside it as ``config.yaml.bak`` (DeerFlow's ``make config-upgrade``
does the same)."""

import os
import shutil
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from harness.config import ConfigError
from harness.config.loader import parse_config
from harness.config.paths import resolve_config_path
from harness.config.upgrade import example_path, upgrade_text


class Command(BaseCommand):
    help = "Add config.example.yaml's missing sections and keys (with their defaults) to an older config.yaml, keeping its comments."

    def add_arguments(self, parser):
        parser.add_argument("--config", help="config.yaml to upgrade (default: DEER_FLOW_CONFIG_PATH or the repository's)")
        parser.add_argument("--dry-run", action="store_true", help="Print what would be added; change nothing.")

    def handle(self, *args, config=None, dry_run=False, **options):
        path = resolve_config_path(config)
        try:
            text = path.read_text(encoding="utf-8")
            new, added = upgrade_text(text, example_path().read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        if new == text:
            self.stdout.write(f"{path}: already current; nothing to add")
            return
        try:
            parse_config(new, str(path))
        except ConfigError as exc:
            raise CommandError(f"the upgraded file would not load, so it was not written: {exc}") from None
        self.stdout.write(f"{path}: adds {', '.join(added) or 'nothing'} and sets config_version")
        if dry_run:
            return
        backup = Path(f"{path}.bak")
        shutil.copy2(path, backup)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-upgrade-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(new)
        os.replace(tmp, Path(path))
        self.stdout.write(f"written; the previous file is {backup}")
