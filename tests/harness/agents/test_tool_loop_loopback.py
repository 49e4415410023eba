"""The whole agent against a real OpenAI-compatible HTTP server on loopback, with the real
sandbox tools: write a file, read it back, present it; multi-turn through DeerFlowClient."""


from harness.agents.markers import ERROR_FALLBACK_KEY
from harness.client import DeerFlowClient
from harness.config import thread_user_data_dir
from harness.config.loader import load_config
from harness.testing import LoopbackOpenAIServer, Reply, call, tool_reply, write_test_config

OUT = "/mnt/user-data/outputs/hello.md"


def _script():
    return [
        tool_reply(call("write_file", description="write the greeting", path=OUT, content="# Hello\nfrom the agent\n")),
        tool_reply(call("read_file", description="check it", path=OUT)),
        tool_reply(call("present_files", filepaths=[OUT])),
        Reply(text="I wrote and presented hello.md.", usage={"input_tokens": 900, "output_tokens": 9, "cache_read": 700}),
        tool_reply(call("ls", description="list outputs", path="/mnt/user-data/outputs")),
        "The outputs folder holds hello.md.",
    ]


def test_multi_turn_tool_loop_against_loopback_server(tmp_path):
    with LoopbackOpenAIServer(_script()) as server:
        app = load_config(write_test_config(tmp_path, server.base_url))
        client = DeerFlowClient(app_config=app, user_id="loop-user", llm_retry_initial_delay=0)
        events = list(client.stream("Write a greeting file and show it to me", thread_id="loop-thread"))
        deltas = [e.data for e in events if e.type == "messages-tuple" and e.data.get("type") == "ai" and "content" in e.data]
        final = "".join(d["content"] for d in deltas if d["id"] == deltas[-1]["id"])
        assert final == "I wrote and presented hello.md."
        tool_results = {e.data["name"]: e.data for e in events if e.type == "messages-tuple" and e.data.get("type") == "tool"}
        assert set(tool_results) == {"write_file", "read_file", "present_files"}
        assert "from the agent" in tool_results["read_file"]["content"]
        assert all(r["status"] != "error" for r in tool_results.values())
        state = client.get_state("loop-thread")
        assert state["artifacts"] == [OUT]
        host = thread_user_data_dir("loop-user", "loop-thread") / "outputs" / "hello.md"
        assert host.read_text() == "# Hello\nfrom the agent\n"
        assert events[-1].data["usage"]["cache_read"] == 700

        # second turn in the same thread
        assert client.chat("What is in the outputs folder?", thread_id="loop-thread") == "The outputs folder holds hello.md."
        # the real client sent tools, streamed, and saw the tool results of the first turn
        bodies = server.requests
        assert all(b["stream"] for b in bodies)
        names = {t["function"]["name"] for t in bodies[0]["tools"]}
        assert {"bash", "ls", "read_file", "write_file", "str_replace", "present_files", "ask_clarification"} <= names
        assert bodies[0]["messages"][0]["content"] == bodies[-1]["messages"][0]["content"]  # stable system prompt
        assert any(m.get("role") == "tool" and "from the agent" in str(m.get("content")) for m in bodies[-1]["messages"])


def test_provider_errors_over_http_retry_then_fallback(tmp_path):
    script = [Reply(status=429, error_message="slow down"), "after the retry",
              Reply(status=500), Reply(status=502), Reply(status=503)]
    with LoopbackOpenAIServer(script) as server:
        app = load_config(write_test_config(tmp_path, server.base_url))
        client = DeerFlowClient(app_config=app, tools=[], llm_retry_initial_delay=0)
        assert client.chat("hi", thread_id="err-thread") == "after the retry"
        events = list(client.stream("again", thread_id="err-thread"))
        last = client.get_state("err-thread")["messages"][-1]
        assert last.additional_kwargs[ERROR_FALLBACK_KEY] is True
        assert events[-1].data["stop_reason"] == "error_fallback"
        assert len(server.requests) == 5


def test_provider_timeout_becomes_a_marked_fallback(tmp_path):
    with LoopbackOpenAIServer([Reply(text="too late", delay=3.0)]) as server:
        path = write_test_config(tmp_path, server.base_url)
        path.write_text(path.read_text().replace("timeout: 60", "timeout: 0.3"))
        client = DeerFlowClient(app_config=load_config(path), tools=[], llm_max_retries=0)
        client.chat("hi", thread_id="slow-thread")
        last = client.get_state("slow-thread")["messages"][-1]
        assert last.additional_kwargs[ERROR_FALLBACK_KEY] is True
        assert last.additional_kwargs["error"]["type"] == "timeout"


def test_tool_call_cut_off_by_the_length_limit_is_not_run(tmp_path):
    cut = Reply(tool_calls=[call("write_file", '{"description": "d", "path": "/mnt/user-data/outputs/long.md", "content": "# Chapter 1\\nIt was a dark')],
                finish_reason="length")
    with LoopbackOpenAIServer([cut, "I will write it in parts."]) as server:
        app = load_config(write_test_config(tmp_path, server.base_url))
        client = DeerFlowClient(app_config=app, user_id="len-user", llm_retry_initial_delay=0)
        assert client.chat("write a long story", thread_id="len-thread") == "I will write it in parts."
        result = [m for m in client.get_state("len-thread")["messages"] if m.type == "tool"][0]
        assert result.status == "error" and "output token limit" in result.content
        assert not (thread_user_data_dir("len-user", "len-thread") / "outputs" / "long.md").exists()
        assert "output token limit" in str(server.requests[1]["messages"][-1]["content"])


def test_summarization_over_http_stays_out_of_the_stream(tmp_path):
    def reply(messages):
        if "compress a conversation" in str(messages[-1].get("content")):
            return "SUMMARY-TEXT: the user said hello several times."
        return Reply(text=f"answer {len(messages)}", usage={"input_tokens": 50, "output_tokens": 3})

    with LoopbackOpenAIServer([reply] * 20) as server:
        extra = "summarization:\n  enabled: true\n  trigger: [{type: messages, value: 6}]\n  keep: {type: messages, value: 2}\n"
        app = load_config(write_test_config(tmp_path, server.base_url, extra_yaml=extra))
        client = DeerFlowClient(app_config=app, tools=[])
        streamed = []
        for i in range(5):
            streamed += [e.data for e in client.stream(f"hello {i}", thread_id="sum-thread") if e.type == "messages-tuple"]
        state = client.get_state("sum-thread")
        assert state["summary_text"].startswith("SUMMARY-TEXT")
        assert len(state["messages"]) < 10
        assert not any("SUMMARY-TEXT" in str(d.get("content")) for d in streamed)
        # the next request carries the summary as context
        last_body = server.requests[-1]["messages"]
        assert any("SUMMARY-TEXT" in str(m.get("content")) for m in last_body)


def test_a_content_filtered_stream_over_http_writes_no_file_and_says_why(tmp_path):
    half = "/mnt/user-data/outputs/report.md"
    script = [tool_reply(call("write_file", description="write", path=half, content="# Rep"), finish_reason="content_filter")]
    with LoopbackOpenAIServer(script) as server:
        app = load_config(write_test_config(tmp_path, server.base_url))
        client = DeerFlowClient(app_config=app, user_id="filter-user", llm_retry_initial_delay=0)
        answer = client.chat("Write the report", thread_id="filter-thread")
        assert "safety reasons" in answer and "write_file" in answer
        assert not (thread_user_data_dir("filter-user", "filter-thread") / "outputs" / "report.md").exists()
        assert client.get_state("filter-thread")["stop_reason"] == "safety_capped"
        assert len(server.requests) == 1


def test_a_long_tool_result_over_http_reaches_the_model_as_a_preview_and_a_path(tmp_path):
    script = [tool_reply(call("bash", description="print", command="seq 1 20000")),
              lambda messages: tool_reply(call("read_file", description="more", path=messages[-1].content.split("saved in full at ")[1].split(":")[0],
                                               start_line=19999, end_line=20000)),
              "The log ends at 20000."]
    with LoopbackOpenAIServer(script) as server:
        app = load_config(write_test_config(tmp_path, server.base_url))
        client = DeerFlowClient(app_config=app, user_id="long-user", llm_retry_initial_delay=0)
        assert client.chat("Count", thread_id="long-thread") == "The log ends at 20000."
        tool_msgs = [m for m in server.requests[1]["messages"] if m.get("role") == "tool"]
        sent = str(tool_msgs[-1]["content"])
        assert "/mnt/user-data/outputs/.tool-results/bash-" in sent and len(sent) < 4000
        read_back = [m for m in server.requests[2]["messages"] if m.get("role") == "tool"][-1]
        assert "19999" in str(read_back["content"]) and "20000" in str(read_back["content"])
