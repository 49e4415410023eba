"""What the embedded default adds to Django's ORM and SQLite backend: the SQLite backend whose
writers queue across processes, and prepared SQL for the statements on the run path. The
internals each relies on are listed in deerflow_site/server/README.md."""
