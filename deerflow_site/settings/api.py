"""DRF, the OpenAPI schema and request size limits."""

from deerflow_site.settings.environment import env

# Request bodies (deerflow_site/server/body_limits.py): without credentials, and JSON/form bodies with
# them (parsed in memory, so Django's own cap is the same). Uploads follow config.yaml. The JSON
# limit leaves room for a full-size artifact edit (uploads.artifact_edit_max_bytes, 2 MiB) once
# JSON-escaped.
DEERFLOW_MAX_ANONYMOUS_BODY = env.int("DEERFLOW_MAX_ANONYMOUS_BODY", default=64 * 1024)
DEERFLOW_MAX_JSON_BODY = env.int("DEERFLOW_MAX_JSON_BODY", default=4 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = DEERFLOW_MAX_JSON_BODY
# JSON nested deeper than this is refused (422) before it reaches a view.
DEERFLOW_MAX_JSON_DEPTH = env.int("DEERFLOW_MAX_JSON_DEPTH", default=64)
# A thread's metadata, in bytes of compact UTF-8 JSON: create, patch and branch refuse more
# (413). A search page carries at most 100 threads' worth of it (apps/threads/metadata.py).
DEERFLOW_MAX_THREAD_METADATA = env.int("DEERFLOW_MAX_THREAD_METADATA", default=64 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["deerflow_site.json_input.SafeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["deerflow_site.json_input.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "deerflow_site.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "DeerFlow API",
    "DESCRIPTION": "LangGraph-compatible threads, runs and assistants, plus DeerFlow's own REST endpoints.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api",
    # /api/langgraph/<x> serves the same views as /api/<x> (deerflow_site/api_urls.py): listed once.
    "PREPROCESSING_HOOKS": ["deerflow_site.api_urls.schema_without_aliases"],
    # The error body, the tags and the run stream's events, the same for every route.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "deerflow_site.api_schema.document_errors_and_tags"],
    # Request and response bodies as separate components: a generated client gets exact types.
    "COMPONENT_SPLIT_REQUEST": True,
    # Several types have a `status`: each enum named for its type, not StatusXXXEnum.
    "ENUM_NAME_OVERRIDES": {
        "ThreadStatusEnum": "apps.threads.api_types.THREAD_STATUSES",
        "RunStatusEnum": "apps.runs.api_types.RUN_STATUSES",
        "TaskStatusEnum": "apps.schedules.api_types.TASK_STATUSES",
        "TaskRunStatusEnum": "apps.schedules.api_types.TASK_RUN_STATUSES",
    },
    # Bundled Swagger/ReDoc assets: the server may have no internet, so no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
