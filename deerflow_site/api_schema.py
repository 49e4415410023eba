"""What the OpenAPI schema at ``/api/schema/`` says beside each view's own types: the error
body every route may answer with, the tags that group the operations in ``/api/docs/``, and the
run stream's event types.

The views' request and response types live next to them (``apps/<x>/api_types.py``); this
module only adds what is the same for every route, as a drf-spectacular postprocessing hook, so
no view has to repeat it. ``tests/site/test_api_schema.py`` holds the schema to it.
"""

from __future__ import annotations

# Every error the one handler (deerflow_site/errors.py) answers is {"detail": "..."}; a
# validation error names the field path in it ("config.recursion_limit: ...").
ERROR_SCHEMA = {
    "type": "object",
    "properties": {"detail": {"type": "string", "description": "What went wrong; a validation error names the field path first."}},
    "required": ["detail"],
    "example": {"detail": "input.messages[0]: needs 'role' (or 'type') and 'content'"},
}

ERROR_STATUSES = {
    "400": "Bad request",
    "401": "No or bad credentials",
    "403": "Not allowed (a token without the scope names it)",
    "404": "Not found, or not yours",
    "409": "Conflict: the thread is busy, or the state does not allow it",
    "413": "Body too large (the detail names the limit)",
    "415": "Unsupported media type",
    "422": "Invalid request: the detail names the field path",
    "429": "Too many requests",
    "502": "An upstream (the model, an MCP server) failed",
    "503": "Unavailable now (no model configured, a feature switched off, a dependency down)",
}

# A route anyone may call answers no 401/403 of its own; listed by (method, path).
PUBLIC = {("get", "/api/health"), ("get", "/api/health/live"), ("get", "/api/health/ready"), ("get", "/health")}

# The first path segment(s) → the tag the operation is listed under in /api/docs/.
TAGS = (
    ("/api/threads/{thread_id}/runs", "runs"),
    ("/api/threads/{thread_id}/state", "state"),
    ("/api/threads/{thread_id}/history", "state"),
    ("/api/threads/{thread_id}/uploads", "uploads"),
    ("/api/threads/{thread_id}/artifacts", "artifacts"),
    ("/api/threads/{thread_id}/approvals", "approvals"),
    ("/api/threads/{thread_id}/scheduled-tasks", "scheduled-tasks"),
    ("/api/threads", "threads"),
    ("/api/runs", "runs"),
    ("/api/v1/auth", "auth"),
    ("/api/budget", "governance"),
    ("/api/approvals", "approvals"),
    ("/health", "health"),
)

# The run stream's events (text/event-stream): `event: <name>`, `data: <json>`, `id: <ms>-<n>`.
STREAM_EVENTS = {
    "metadata": ({"type": "object", "properties": {"run_id": {"type": "string", "format": "uuid"},
                                                    "thread_id": {"type": "string"}},
                  "required": ["run_id"]}, "First: which run this stream is."),
    "values": ({"type": "object", "additionalProperties": True}, "The thread's state values after a step (stream_mode values)."),
    "updates": ({"type": "object", "additionalProperties": True}, "What each node returned (stream_mode updates)."),
    "messages": ({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "object", "additionalProperties": True}},
                 "[message chunk, metadata] (stream_mode messages-tuple)."),
    "custom": ({}, "What a tool or node wrote to the stream (stream_mode custom)."),
    "debug": ({"type": "object", "additionalProperties": True}, "LangGraph's debug events (stream_mode debug)."),
    "tasks": ({"type": "object", "additionalProperties": True}, "Task start and result (stream_mode tasks)."),
    "checkpoints": ({"type": "object", "additionalProperties": True}, "A checkpoint was written (stream_mode checkpoints)."),
    "error": ({"type": "object", "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
               "required": ["error", "message"]}, "The run failed; `end` follows."),
    "gap": ({"type": "object", "additionalProperties": True}, "Last-Event-ID named events this server no longer holds."),
    "end": ({"description": "null"}, "Last: the run is over."),
}


def stream_event_components() -> dict:
    """Each event as Open API 3.2 describes a server-sent event: its ``data`` line is a string
    holding JSON, whose schema is ``contentSchema`` (Schemathesis checks it that way)."""
    components = {}
    for name, (data, description) in STREAM_EVENTS.items():
        components[f"StreamEvent_{name}"] = {
            "type": "object", "description": description,
            "properties": {"event": {"type": "string", "enum": [name]},
                           "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
                           "id": {"type": "string", "description": "<ms>-<n>: send it back as Last-Event-ID to resume."}},
            "required": ["event", "data"],
        }
    components["StreamEvent"] = {
        "description": "One server-sent event of a run's stream; the `event` line names its type and `data` is its JSON.",
        "oneOf": [{"$ref": f"#/components/schemas/StreamEvent_{name}"} for name in STREAM_EVENTS],
        "discriminator": {"propertyName": "event",
                          "mapping": {name: f"#/components/schemas/StreamEvent_{name}" for name in STREAM_EVENTS}},
    }
    return components


def _tag(path: str) -> str:
    for prefix, tag in TAGS:
        if path == prefix or path.startswith(prefix + "/"):
            return tag
    return path.removeprefix("/api/").split("/")[0] or "api"


def document_errors_and_tags(result, generator, request, public):
    """drf-spectacular postprocessing hook: tags, error responses, stream event schemas."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    schemas.update(stream_event_components())
    error_ref = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            operation["tags"] = [_tag(path)]
            responses = operation.setdefault("responses", {})
            for code, description in ERROR_STATUSES.items():
                if (method, path) in PUBLIC and code in ("401", "403"):
                    continue
                responses.setdefault(code, {"description": description, "content": {"application/json": {"schema": error_ref}}})
            for response in responses.values():
                stream = response.get("content", {}).get("text/event-stream")
                if stream is not None:
                    stream["schema"] = {"$ref": "#/components/schemas/StreamEvent"}
    return result

