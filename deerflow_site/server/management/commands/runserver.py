"""``manage.py runserver``: Django's development server (autoreload, static files) served by
Daphne, so streams and websockets work as they do under ``make run``.

Daphne's app gave the project this command until it left INSTALLED_APPS
(deerflow_site/settings/base.py says why). The command is Daphne's, unchanged; this app comes
first in INSTALLED_APPS so that it, not Django's WSGI one, answers to ``runserver``.
"""

from daphne.management.commands.runserver import Command

__all__ = ["Command"]
