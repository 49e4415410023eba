"""``manage.py config_check [--config PATH] [--extensions PATH]``: does the config load, and
what did the loader do with DeerFlow's keys (mapped ones, and ones accepted without effect)."""

from django.core.management.base import BaseCommand, CommandError

from harness.config import ConfigError
from harness.config.extensions import parse_extensions
from harness.config.loader import parse_config, parse_yaml
from harness.config.paths import resolve_config_path, resolve_extensions_path
from harness.config.report import build_report


class Command(BaseCommand):
    help = "Load config.yaml and extensions_config.json; list DeerFlow keys mapped or accepted without effect."

    def add_arguments(self, parser):
        parser.add_argument("--config", help="config.yaml to check (default: DEER_FLOW_CONFIG_PATH or the repository's)")
        parser.add_argument("--extensions", help="extensions_config.json to check (default: beside config.yaml)")

    def handle(self, *args, config=None, extensions=None, **options):
        config_path = resolve_config_path(config)
        ext_path = resolve_extensions_path(extensions) if (extensions or not config) else config_path.parent / "extensions_config.json"
        try:
            text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
            app = parse_config(text, str(config_path))
            raw_keys = list(parse_yaml(text, str(config_path)))
            ext = parse_extensions(ext_path.read_text(encoding="utf-8"), str(ext_path)) if ext_path.exists() else None
        except ConfigError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot read the file: {exc}") from None
        report = build_report(app, ext, raw_keys=raw_keys)
        self.stdout.write(f"{config_path}: loads ({len(app.models)} model(s))" + ("" if config_path.exists() else " [file missing: defaults]"))
        self.stdout.write(f"{ext_path}: " + ("loads" if ext is not None else "missing (no MCP servers, default skill toggles)"))
        for line in report.lines():
            self.stdout.write(line)
