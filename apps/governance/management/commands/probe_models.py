"""``manage.py probe_models [--model NAME ...]``: test each configured model and store the result."""

from django.core.management.base import BaseCommand, CommandError

from apps.governance.probes import models_probe
from harness.config.loader import get_app_config


class Command(BaseCommand):
    help = "Run the capability probe (completion, streaming, tools, usage, reasoning, vision, context) against configured models."

    def add_arguments(self, parser):
        parser.add_argument("--model", action="append", dest="models", help="Only this model (repeatable).")

    def handle(self, *args, models=None, **options):
        known = [m.name for m in get_app_config().models]
        unknown = sorted(set(models or []) - set(known))
        if unknown:
            raise CommandError(f"unknown model(s) {', '.join(unknown)}; configured: {', '.join(known) or 'none'}")
        if not known:
            raise CommandError("no models are configured in config.yaml")
        failed = 0
        for row in models_probe(names=models):
            self.stdout.write(f"{row.model_name}: {row.status}")
            for step in row.steps:
                line = f"  {step['status']:<8} {step['name']}"
                if step.get("detail"):
                    line += f" — {step['detail']}"
                if step.get("error"):
                    line += f"\n           {step['error']}"
                self.stdout.write(line)
            failed += row.status != "passed"
        if failed:
            self.stdout.write(self.style.WARNING(f"{failed} model(s) did not pass"))
