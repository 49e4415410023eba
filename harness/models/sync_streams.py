"""A sync streamed answer that leaves its connection open for the next request, as an async one does.

After the ``[DONE]`` event the OpenAI SDK's async stream reads what is left of the response
(over HTTP/1.1 the chunked body's last, empty chunk) so that the connection goes back to the pool.
Its sync stream stops at ``[DONE]`` and closes an unfinished response, which closes the
connection. Every sync streamed call then opened a new one (with OpenAI, a new TLS handshake):
each model call of the embedded client's ``chat`` and ``stream``, which run the graph in sync.

Here the sync stream's events are read through a generator that, on ``[DONE]``, reads the rest of
the body before handing the event on, as the async stream does. The read is bounded: its read
timeout is lowered to ``DRAIN_SECONDS``, and any error there leaves the response to be closed as
before. A stream of another shape is left as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# A server done with its answer ends the body at once; one that does not is not waited for.
DRAIN_SECONDS = 1.0


def _drain(response: Any) -> None:
    if getattr(response, "http_version", None) != "HTTP/1.1" or getattr(response, "is_closed", True):
        return
    timeout = getattr(getattr(response, "request", None), "extensions", {}).get("timeout")
    if isinstance(timeout, dict):
        read = timeout.get("read")
        timeout["read"] = DRAIN_SECONDS if read is None else min(read, DRAIN_SECONDS)
    with contextlib.suppress(Exception):  # cleanup: never an error for an answer already complete
        for _ in response.stream:
            pass


def keep_connection(result: Any) -> Any:
    """``result`` (what a sync ``create`` returned), its events read to the body's end on ``[DONE]``."""
    iter_events = getattr(result, "_iter_events", None)
    response = getattr(result, "response", None)
    if not callable(iter_events) or response is None or not hasattr(response, "stream"):
        return result

    def events() -> Iterator[Any]:
        for sse in iter_events():
            if str(getattr(sse, "data", "")).startswith("[DONE]"):
                _drain(response)
            yield sse

    result._iter_events = events
    return result
