#!/usr/bin/env python
"""Django's command-line utility; configuration errors print one line, not a traceback."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")
    from django.core.management import execute_from_command_line

    from django.core.exceptions import ImproperlyConfigured

    from harness.config import ConfigError

    try:
        execute_from_command_line(sys.argv)
    except (ConfigError, ImproperlyConfigured) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
