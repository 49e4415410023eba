"""The model probe against the loopback OpenAI server, well behaved and misbehaving in each
way a real provider does: every failure is found and reported by step name with the error."""

from __future__ import annotations

from harness.config import parse_config
from harness.governance.probe import probe_model
from harness.testing import LoopbackOpenAIServer, Reply, call, loopback_config_text, tool_reply


def good_script():
    return ["ready", "1, 2, 3", "again",
            tool_reply(call("probe_lookup", key="alpha")), "The value is value-of-alpha.",
            tool_reply(call("probe_lookup", key="alpha"), call("probe_lookup", key="beta")),
            "read"]


def probe(server, extra=""):
    config = parse_config(loopback_config_text(server.base_url, extra_yaml=extra))
    return probe_model("loopback", config=config)


def steps(result):
    return {s.name: s for s in result.steps}


def test_a_well_behaved_model_passes_every_step():
    with LoopbackOpenAIServer(good_script()) as server:
        result = probe(server)
    by = steps(result)
    assert result.status == "passed", result.as_dict()
    assert [s.name for s in result.steps] == ["completion", "usage", "streaming", "reasoning_round_trip", "tool_call",
                                              "parallel_tool_calls", "vision", "context_window"]
    assert by["vision"].status == "skipped" and "supports_vision" in by["vision"].detail
    assert by["parallel_tool_calls"].detail == "2 calls in one reply"
    assert not result.blocks_agent


def test_a_model_that_does_not_call_tools_fails_tool_call_and_blocks_the_agent():
    script = ["ready", "1, 2, 3", "again", "The value is probably 42.", "Alpha is 1 and beta is 2.", "read"]
    with LoopbackOpenAIServer(script) as server:
        result = probe(server)
    by = steps(result)
    assert by["tool_call"].status == "failed" and "answered without calling the tool" in by["tool_call"].detail
    assert by["parallel_tool_calls"].status == "failed" and "got 0" in by["parallel_tool_calls"].detail
    assert by["completion"].status == "passed" and result.blocks_agent


def test_a_model_that_reports_no_usage_fails_the_usage_step():
    with LoopbackOpenAIServer(good_script(), quirks=["no_usage"]) as server:
        result = probe(server)
    assert result.failed_steps == ["usage"]
    assert "no token usage" in steps(result)["usage"].detail and not result.blocks_agent


def test_a_model_needing_reasoning_content_back_fails_the_second_turn_with_the_providers_error():
    script = [Reply(text="ready", reasoning="thinking about it"), "1, 2, 3", "again", tool_reply(call("probe_lookup", key="alpha")),
              tool_reply(call("probe_lookup", key="alpha"), call("probe_lookup", key="beta")), "read"]
    with LoopbackOpenAIServer(script, quirks=["requires_reasoning_content"]) as server:
        result = probe(server)
    step = steps(result)["reasoning_round_trip"]
    assert step.status == "failed" and "reasoning_content in the thinking mode must be passed back" in step.error
    assert "400" in step.error or "BadRequest" in step.error
    assert steps(result)["completion"].status == "passed"


def test_a_broken_stream_fails_the_streaming_step():
    with LoopbackOpenAIServer(good_script(), quirks=["broken_stream"]) as server:
        result = probe(server)
    assert result.failed_steps == ["streaming"], result.as_dict()
    assert steps(result)["streaming"].status == "failed"


def test_a_model_without_its_key_is_not_configured_and_never_called(monkeypatch, tmp_path):
    monkeypatch.delenv("PROBE_MISSING_KEY", raising=False)
    from harness.config.loader import load_config

    with LoopbackOpenAIServer([]) as server:
        text = loopback_config_text(server.base_url).replace("api_key: test-key", "api_key: $PROBE_MISSING_KEY")
        path = tmp_path / "config.yaml"
        path.write_text(text)
        result = probe_model("loopback", config=load_config(path))
        assert server.requests == []
    assert result.status == "not_configured"
    assert "not configured" in result.steps[0].detail and "PROBE_MISSING_KEY" in result.steps[0].detail


def test_an_unknown_model_is_reported_not_raised():
    with LoopbackOpenAIServer([]) as server:
        result = probe_model("ghost", config=parse_config(loopback_config_text(server.base_url)))
    assert result.status == "not_configured" and "ghost" in result.steps[0].detail


def test_vision_is_probed_when_declared():
    script = good_script()
    script.insert(6, "red")
    with LoopbackOpenAIServer(script) as server:
        result = probe(server, extra="    supports_vision: true\n")
        image_request = server.requests[-2]
    assert steps(result)["vision"].status == "passed" and "image_url" in str(image_request["messages"])
