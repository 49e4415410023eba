"""The OpenAPI schema types every operation: each request body and each response (errors
included) has a schema with properties, or is a documented free-form part inside one.

"Untyped" is what a client cannot generate a type from: a body or a JSON response whose schema
is missing, or a bare object with no properties (an object whose values are all of one declared
type, a map, is typed). LangGraph's free-form parts (metadata, run input, state values) stay
free-form *inside* a typed envelope, which this does not count.
"""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict, node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _typed(schema: dict, node: dict | None) -> bool:
    node = _resolve(schema, node or {})
    if not node:
        return False
    if "oneOf" in node or "anyOf" in node or "allOf" in node:
        return all(_typed(schema, part) for part in node.get("oneOf") or node.get("anyOf") or node.get("allOf"))
    if node.get("type") == "array":
        return _typed(schema, node.get("items"))
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        return bool(node.get("properties")) or (isinstance(extra, dict) and bool(extra))
    return "type" in node


def untyped_operations(schema: dict) -> list[str]:
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            reasons = []
            body = operation.get("requestBody")
            for media, content in (body or {}).get("content", {}).items():
                if not _typed(schema, content.get("schema")):
                    reasons.append(f"request {media}")
            responses = operation.get("responses", {})
            if not any(code.startswith("2") or code.startswith("3") for code in responses):
                reasons.append("no success response")
            for code, response in responses.items():
                content = response.get("content")
                if content is None:
                    if code not in ("202", "204", "302"):
                        reasons.append(f"response {code} has no body type")
                    continue
                for media, item in content.items():
                    if not _typed(schema, item.get("schema")):
                        reasons.append(f"response {code} {media}")
            if reasons:
                found.append(f"{method.upper()} {path}: {', '.join(reasons)}")
    return found


def test_no_operation_is_untyped(schema):
    untyped = untyped_operations(schema)
    assert not untyped, f"{len(untyped)} untyped operations:\n" + "\n".join(untyped)


def test_every_operation_documents_its_errors_and_has_a_tag(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            assert operation.get("tags"), f"{method} {path} has no tag"
            errors = {code for code, response in operation["responses"].items() if code.startswith("4")}
            assert {"404", "422"} <= errors, f"{method} {path} documents no 404/422"
            for code in errors:
                error = _resolve(schema, operation["responses"][code]["content"]["application/json"]["schema"])
                # DeerFlow's sign-in routes answer DeerFlow's error shapes, each still {detail}.
                for part in [_resolve(schema, p) for p in error.get("oneOf", [])] or [error]:
                    assert "detail" in part["required"], f"{method} {path} {code}"


def test_the_run_stream_documents_its_event_types(schema):
    stream = schema["paths"]["/api/threads/{thread_id}/runs/stream"]["post"]["responses"]["200"]["content"]
    event = _resolve(schema, stream["text/event-stream"]["schema"])
    names = {_resolve(schema, part)["properties"]["event"]["enum"][0] for part in event["oneOf"]}
    assert {"metadata", "values", "messages", "error", "end"} <= names


def test_the_run_request_is_the_model_the_views_validate_with(schema):
    from apps.runs.schemas import RunCreate

    body = schema["paths"]["/api/threads/{thread_id}/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(_resolve(schema, body)["properties"]) == set(RunCreate.model_fields)


@pytest.mark.parametrize("published,accepted", [
    ("apps.agents.api_types.AgentWrite", "apps.agents.services.FIELDS"),
    ("apps.agents.api_types.AssistantWrite", "apps.agents.services._ASSISTANT_KEYS"),
    ("apps.schedules.api_types.TaskWrite", "apps.schedules.services.FIELDS"),
    ("apps.schedules.api_types.TaskOptions", "apps.schedules.services.OPTION_KEYS"),
])
def test_a_published_body_names_the_fields_its_service_accepts(published, accepted):
    """Where a service checks a body field by field (naming the field it refuses), the type the
    schema publishes lists exactly the fields it accepts, so neither can drift alone."""
    from django.utils.module_loading import import_string

    assert set(import_string(published)().fields) == set(import_string(accepted))
