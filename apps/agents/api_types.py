"""Wire types of custom agents (``/api/agents``), the LangGraph assistants over them and the
model list. The agent bodies are checked field by field by ``services.agent_clean`` (the
messages name the field); these serializers publish the same fields, and
``tests/site/test_api_schema.py`` holds the two to one set."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


class ModelSettings(serializers.Serializer):
    temperature = serializers.FloatField(allow_null=True, required=False, min_value=0, max_value=2)
    max_tokens = serializers.IntegerField(allow_null=True, required=False, min_value=1, max_value=1_000_000)


class AgentWrite(serializers.Serializer):
    """The agent's definition: all of it on create and PUT (``name`` required), any part on PATCH."""

    name = serializers.CharField(help_text="1-64 letters, digits, '-' or '_'")
    display_name = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=128)
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=2000)
    soul = serializers.CharField(required=False, allow_null=True, allow_blank=True, help_text="the agent's instructions")
    model = serializers.CharField(required=False, allow_null=True, allow_blank=True, help_text="a configured model's name")
    model_settings = ModelSettings(required=False, allow_null=True)
    thinking_enabled = serializers.BooleanField(required=False)
    reasoning_effort = serializers.ChoiceField(choices=["minimal", "low", "medium", "high"], required=False, allow_null=True, allow_blank=True)
    tool_groups = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    skills = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    memory_enabled = serializers.BooleanField(required=False)
    avatar = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=16)
    color = serializers.CharField(required=False, allow_null=True, allow_blank=True, help_text="#rrggbb")
    shared = serializers.BooleanField(required=False)
    metadata = free_object(required=False)
    github = free_object(required=False, allow_null=True,
                         help_text="repositories and GitHub events that start this agent: {bot_login, recursion_limit, bindings: "
                                   "[{repo, triggers: {event: {actions, require_mention, allow_authors, mention_login, labels}}}]}")


class AgentSettings(serializers.Serializer):
    name = serializers.CharField()
    display_name = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    soul = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_null=True)
    model_settings = ModelSettings()
    thinking_enabled = serializers.BooleanField()
    reasoning_effort = serializers.CharField(allow_null=True)
    tool_groups = serializers.ListField(child=serializers.CharField(), allow_null=True)
    skills = serializers.ListField(child=serializers.CharField(), allow_null=True)
    memory_enabled = serializers.BooleanField()
    avatar = serializers.CharField(allow_blank=True)
    color = serializers.CharField(allow_blank=True)
    shared = serializers.BooleanField()
    github = free_object(allow_null=True)


class Agent(AgentSettings):
    assistant_id = serializers.CharField()
    owner = serializers.CharField()
    editable = serializers.BooleanField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AgentList(serializers.Serializer):
    agents = Agent(many=True)


class AgentNameCheck(serializers.Serializer):
    available = serializers.BooleanField()
    name = serializers.CharField()


class AgentDuplicate(serializers.Serializer):
    name = serializers.CharField(required=False, allow_null=True, help_text="the copy's name (default: <name>-copy)")


class AgentVersion(serializers.Serializer):
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    settings = AgentSettings()


class AgentVersions(serializers.Serializer):
    versions = AgentVersion(many=True)


class Assistant(serializers.Serializer):
    assistant_id = serializers.CharField()
    graph_id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True, allow_null=True)
    config = free_object()
    context = free_object(help_text="the agent's settings")
    metadata = free_object()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(required=False)


class AssistantWrite(serializers.Serializer):
    assistant_id = serializers.CharField(required=False, allow_null=True)
    graph_id = serializers.CharField(required=False, allow_null=True, help_text="only 'lead_agent'")
    name = serializers.CharField(required=False, allow_null=True)
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    config = free_object(required=False, allow_null=True)
    context = free_object(required=False, allow_null=True, help_text="the agent's settings (AgentWrite's fields)")
    metadata = free_object(required=False, allow_null=True)
    if_exists = serializers.ChoiceField(choices=["raise", "do_nothing"], required=False, allow_null=True)


class AssistantSearch(serializers.Serializer):
    graph_id = serializers.CharField(required=False, allow_null=True)
    name = serializers.CharField(required=False, allow_null=True)
    metadata = free_object(required=False, allow_null=True)
    limit = serializers.IntegerField(required=False, min_value=0)
    offset = serializers.IntegerField(required=False, min_value=0)
    sort_by = serializers.CharField(required=False, allow_null=True)
    sort_order = serializers.CharField(required=False, allow_null=True)
    select = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)


class AssistantGraph(serializers.Serializer):
    graph_id = serializers.CharField()
    nodes = serializers.ListField(child=free_object())
    edges = serializers.ListField(child=free_object())


class AssistantSchemas(serializers.Serializer):
    graph_id = serializers.CharField()
    input_schema = free_object()
    output_schema = free_object()
    state_schema = free_object()
    config_schema = free_object()
    context_schema = free_object()


class Model(serializers.Serializer):
    name = serializers.CharField()
    model = serializers.CharField(allow_null=True)
    display_name = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    supports_thinking = serializers.BooleanField()
    supports_reasoning_effort = serializers.BooleanField()
    supports_vision = serializers.BooleanField()
    available = serializers.BooleanField()
    unavailable_reason = serializers.CharField(allow_null=True)
    probe = free_object(allow_null=True, help_text="the latest capability probe, if any")
    selectable = serializers.BooleanField()


class TokenUsageSwitch(serializers.Serializer):
    enabled = serializers.BooleanField()


class ModelList(serializers.Serializer):
    models = Model(many=True)
    token_usage = TokenUsageSwitch()
