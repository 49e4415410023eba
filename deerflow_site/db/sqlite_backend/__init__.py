"""Django's SQLite backend with writers queued across processes (ENGINE
``deerflow_site.db.sqlite_backend``, set in deerflow_site/settings/database.py); see base.py."""
