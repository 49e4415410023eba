"""Scheduled tasks: cron handling, the beat entry, dispatch through ``start_run()``.

``cron`` parses and previews schedules, ``services`` writes tasks (and their beat entries),
``selectors`` reads them, ``dispatch`` turns one firing into one run.
"""
