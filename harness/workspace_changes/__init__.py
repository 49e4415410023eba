"""Workspace changes and delivery receipts: what a run did to its thread's files.

``recorder.snapshot_before`` runs before the graph, ``recorder.settle`` after it; the app layer
journals the results as the ``workspace_changes`` and ``run.delivery`` events (apps/workspace).
Framework-free, like the rest of the harness.
"""
