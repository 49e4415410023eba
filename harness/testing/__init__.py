"""Test kit: fake model providers that behave like real ones where the agent can tell.

- :class:`ScriptedChatModel` — an in-process LangChain chat model replaying a script
  (streamed chunks, tool-call argument fragments, usage metadata). Fast; for middleware
  and agent-logic tests and the overhead benchmark.
- :class:`LoopbackOpenAIServer` — a real HTTP server on 127.0.0.1 speaking the OpenAI
  chat-completions protocol (JSON and SSE streaming, tool-call deltas, usage, error
  statuses, delays), so tests exercise the production ``ChatOpenAI`` path.

Both take the same script: a list of :class:`Reply` (or plain strings for text replies, or
callables receiving the request messages)::

    from harness.testing import ScriptedChatModel, Reply, call, tool_reply

    model = ScriptedChatModel(script=[
        tool_reply(call("write_file", path="/mnt/user-data/outputs/a.txt", content="hi")),
        Reply(status=429),                   # a transient provider error
        "Done: the file is written.",
    ])

``write_test_config(tmp_path, base_url)`` writes a config.yaml whose only model points at
a loopback server, for tests that go through :func:`harness.models.create_chat_model`.
"""

from harness.testing.openai_server import LoopbackOpenAIServer
from harness.testing.script import Reply, ToolCallSpec, call, tool_reply
from harness.testing.scripted_model import RecordedRequest, ScriptedChatModel, ScriptedProviderError, ScriptExhaustedError


def loopback_config_text(base_url: str, *, extra_yaml: str = "", model_name: str = "loopback",
                         use: str = "langchain_openai:ChatOpenAI", timeout: int = 60) -> str:
    """A config.yaml whose only model is an OpenAI-compatible server at *base_url*. The model's
    timeout is a hang bound: on a machine at load 20 a loopback answer can take seconds."""
    return (
        "config_version: 1\n"
        "models:\n"
        f"  - name: {model_name}\n"
        "    display_name: Loopback model\n"
        f"    use: {use}\n"
        "    model: test-model\n"
        f"    base_url: {base_url}\n"
        "    api_key: test-key\n"
        "    max_retries: 0\n"
        f"    timeout: {timeout}\n"
        "    context_window: 32000\n"
        + extra_yaml
    )


def write_test_config(directory, base_url: str, *, extra_yaml: str = "", model_name: str = "loopback") -> "object":
    """Write ``config.yaml`` in *directory* with one ChatOpenAI model at *base_url*; return its path."""
    from pathlib import Path

    path = Path(directory) / "config.yaml"
    path.write_text(loopback_config_text(base_url, extra_yaml=extra_yaml, model_name=model_name))
    return path


__all__ = [
    "loopback_config_text",
    "LoopbackOpenAIServer",
    "RecordedRequest",
    "Reply",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ScriptedProviderError",
    "ToolCallSpec",
    "call",
    "tool_reply",
    "write_test_config",
]
