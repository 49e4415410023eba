"""Observability shared by servers and workers: log context (run and request ids),
Prometheus metrics and tracing callbacks. No Django here: the apps configure it."""
