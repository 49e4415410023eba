"""The run engine: runs and their event journal, admission, executors, streams, websocket consumers."""
