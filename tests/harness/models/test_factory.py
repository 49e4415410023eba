"""The model factory builds what config.yaml describes and fails with actionable messages."""

import pytest
from langchain_openai import ChatOpenAI

from harness.config import ConfigError, parse_config
from harness.models import ModelError, ModelUnavailableError, UnknownModelError, create_chat_model, list_models
from harness.models.reasoning import ReasoningChatOpenAI
from harness.testing import LoopbackOpenAIServer, Reply

CONFIG = """
models:
  - name: fast
    display_name: Fast
    use: langchain_openai:ChatOpenAI
    model: m-fast
    base_url: http://127.0.0.1:9/v1
    api_key: k
    max_tokens: 512
    context_window: 8000
    supports_vision: true
    pricing: {input_per_million: 1.0, output_per_million: 2.0}
  - name: thinker
    use: harness.models.reasoning:ReasoningChatOpenAI
    model: m-think
    base_url: http://127.0.0.1:9/v1
    api_key: k
    supports_thinking: true
    extra_body: {top_k: 20}
    when_thinking_enabled:
      extra_body: {chat_template_kwargs: {enable_thinking: true}}
  - name: keyless
    use: langchain_openai:ChatOpenAI
    model: m
    api_key: $DEERFLOW_TEST_SURELY_MISSING_KEY
"""


@pytest.fixture
def cfg(monkeypatch):
    monkeypatch.delenv("DEERFLOW_TEST_SURELY_MISSING_KEY", raising=False)
    return parse_config(CONFIG)


def test_default_is_first_model_with_its_constructor_keys(cfg):
    model = create_chat_model(config=cfg)
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "m-fast" and model.max_tokens == 512
    assert model.metadata["deerflow_model_name"] == "fast"


def test_thinking_overrides_merge_into_nested_keys(cfg):
    plain = create_chat_model("thinker", config=cfg)
    thinking = create_chat_model("thinker", thinking_enabled=True, config=cfg)
    assert isinstance(thinking, ReasoningChatOpenAI)
    assert plain.extra_body == {"top_k": 20}
    assert thinking.extra_body == {"top_k": 20, "chat_template_kwargs": {"enable_thinking": True}}
    # a model without thinking support still builds, without the overrides
    assert create_chat_model("fast", thinking_enabled=True, config=cfg).extra_body is None


def test_unknown_model_lists_the_configured_ones(cfg):
    with pytest.raises(UnknownModelError, match="unknown model 'gpt-9'; configured models: fast, thinker, keyless"):
        create_chat_model("gpt-9", config=cfg)
    with pytest.raises(UnknownModelError, match="no chat models are configured"):
        create_chat_model(config=parse_config("models: []"))


def test_model_with_missing_key_is_listed_but_unusable(cfg):
    listed = {m["name"]: m for m in list_models(config=cfg)}
    assert listed["keyless"]["available"] is False
    assert "DEERFLOW_TEST_SURELY_MISSING_KEY" in listed["keyless"]["unavailable_reason"]
    assert listed["fast"]["supports_vision"] is True and listed["fast"]["pricing"]["input_per_million"] == 1.0
    assert "api_key" not in listed["fast"] and "base_url" not in listed["fast"]
    assert listed["fast"]["model"] == "m-fast" and listed["fast"]["display_name"] == "Fast"
    assert listed["fast"]["supports_reasoning_effort"] is False and listed["thinker"]["supports_thinking"] is True
    with pytest.raises(ModelUnavailableError, match="DEERFLOW_TEST_SURELY_MISSING_KEY"):
        create_chat_model("keyless", config=cfg)


def test_missing_provider_package_names_the_package_to_install(cfg):
    with pytest.raises(ConfigError, match="pip install langchain-notaprovider"):
        parse_config("models:\n  - {name: x, use: 'langchain_notaprovider:ChatX'}\n")
    # an entry that bypassed validation (e.g. built in code) fails the same way at build time
    entry = cfg.models[0].model_copy(update={"use": "langchain_notaprovider:ChatX"})
    cfg.models[0] = entry
    with pytest.raises(ModelError, match="pip install langchain-notaprovider"):
        create_chat_model("fast", config=cfg)


async def test_reasoning_field_survives_full_and_streamed_responses():
    script = [Reply(text="42", reasoning="think think"), Reply(text="43", reasoning="more thoughts here", chunk_size=3)]
    with LoopbackOpenAIServer(script) as server:
        cfg = parse_config(f"models:\n  - {{name: r, use: 'harness.models.reasoning:ReasoningChatOpenAI', model: m, base_url: '{server.base_url}', api_key: k, max_retries: 0}}\n")
        model = create_chat_model("r", config=cfg)
        full = await model.ainvoke("q")
        assert full.content == "42" and full.additional_kwargs["reasoning_content"] == "think think"
        total = None
        async for chunk in model.astream("q"):
            total = chunk if total is None else total + chunk
        assert total.content == "43" and total.additional_kwargs["reasoning_content"] == "more thoughts here"


def test_streamed_usage_is_requested_unless_disabled(cfg):
    assert create_chat_model("fast", config=cfg).stream_usage is True
    assert create_chat_model("fast", config=cfg, stream_usage=False).stream_usage is False
