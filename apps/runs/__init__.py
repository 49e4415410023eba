"""Runs and their event journal, admission, executors, streams, websocket consumers, scheduled tasks."""
