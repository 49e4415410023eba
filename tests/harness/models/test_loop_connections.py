"""A configured OpenAI-SDK model keeps its connections open, and works from any event loop:
through the SDK's aiohttp transport (the default) and through httpx (an entry that sets its
own socket options, or a proxy in the environment)."""

import asyncio
import gc
import json
import logging
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.config import parse_config
from harness.models import create_chat_model
from harness.models.aiohttp_transport import AiohttpPerLoop
from harness.models.loop_connections import PoolPerLoop
from harness.testing import LoopbackOpenAIServer, Reply
from tests.support.waiting import HANG_SECONDS

# "httpx": an entry with socket options of its own keeps langchain_openai's httpx client.
TRANSPORTS = {"aiohttp": "", "httpx": "    http_socket_options: []\n"}


def _model(server: LoopbackOpenAIServer, timeout: int, transport: str = "aiohttp"):
    # Each test its own timeout, so its own HTTP client: langchain_openai shares one per (base
    # URL, timeout), and the OS may give a later test the port of an earlier one.
    return create_chat_model("m", config=parse_config(f"""
models:
  - name: m
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: {server.base_url}
    api_key: k
    max_retries: 0
    timeout: {timeout}
{TRANSPORTS[transport]}"""))


def _transport(model):
    return model.root_async_client._client._transport


async def _answer(model, prompt: str) -> str:
    text = ""
    async for chunk in model.astream(prompt):
        text += chunk.content
    return text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_calls_from_new_event_loops_each_get_their_answer(transport):
    # What the embedded client's sync methods do: each call under asyncio.run, a loop of its
    # own, against a server that keeps the connection of the previous answer open.
    with LoopbackOpenAIServer([Reply(text="first answer"), Reply(text="second answer"), Reply(text="third answer")]) as server:
        model = _model(server, 31, transport)
        answers = [asyncio.run(_answer(model, f"question {i}")) for i in range(3)]
    assert answers == ["first answer", "second answer", "third answer"]
    assert len(set(server.request_peers)) == 3  # a connection of each loop's own


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_calls_on_one_loop_share_one_connection(transport):
    async def three(model) -> list[str]:
        return [await _answer(model, f"question {i}") for i in range(3)]

    with LoopbackOpenAIServer([Reply(text="one"), Reply(text="two"), Reply(text="three")]) as server:
        answers = asyncio.run(three(_model(server, 32, transport)))
    assert answers == ["one", "two", "three"]
    assert len(server.request_peers) == 3 and len(set(server.request_peers)) == 1


def test_the_pools_of_closed_loops_are_let_go():
    with LoopbackOpenAIServer([Reply(text="answer")], loop=True) as server:
        model = _model(server, 33, "httpx")
        for i in range(4):
            asyncio.run(_answer(model, f"question {i}"))
        pool = _transport(model)._pool
        assert isinstance(pool, PoolPerLoop)
        assert len(pool._pools.values) == 1  # the last loop's; the three before it were closed


def test_the_sessions_of_closed_loops_are_let_go_without_a_complaint(caplog):
    with LoopbackOpenAIServer([Reply(text="answer")], loop=True) as server:
        model = _model(server, 35)
        loops = []

        async def ask(i: int) -> str:
            loops.append(asyncio.get_running_loop())
            return await _answer(model, f"question {i}")

        with caplog.at_level(logging.WARNING):
            for i in range(4):
                asyncio.run(ask(i))
            transport = _transport(model)
            assert isinstance(transport, AiohttpPerLoop)
            # The client is the process's: other loops of this process may hold sessions too.
            held = set(transport._transports.values)
            assert loops[-1] in held and not held & set(loops[:-1])  # the three before the last were let go
            gc.collect()
    # aiohttp logs "Unclosed client session" / "Unclosed connector" for a session collected open
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


def test_connections_carry_langchain_openais_tcp_keepalive():
    async def ask_and_look(model) -> int:
        await _answer(model, "question")
        session = _transport(model)._transports.get(asyncio.get_running_loop()).client
        kept = [proto for conns in session.connector._conns.values() for proto, _ in conns]
        return kept[0].transport.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)

    with LoopbackOpenAIServer([Reply(text="answer")]) as server:
        assert asyncio.run(ask_and_look(_model(server, 36))) == 1


def test_a_proxy_in_the_environment_keeps_the_httpx_client(monkeypatch):
    # httpx sends through HTTPS_PROXY and the like; the aiohttp session here would not
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with LoopbackOpenAIServer([Reply(text="answer")]) as server:
        model = _model(server, 37)
    assert isinstance(_transport(model)._pool, PoolPerLoop)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sync_streamed_calls_share_one_connection(transport):
    # The embedded client's chat and stream run the graph in sync: each model call a sync stream.
    with LoopbackOpenAIServer([Reply(text="one"), Reply(text="two"), Reply(text="three")]) as server:
        model = _model(server, 34, transport)
        answers = ["".join(chunk.content for chunk in model.stream(f"question {i}")) for i in range(3)]
    assert answers == ["one", "two", "three"]
    assert len(server.request_peers) == 3 and len(set(server.request_peers)) == 1


def test_a_sync_stream_whose_body_never_ends_is_not_waited_for():
    # A server that sends [DONE] and then holds the body open: the answer is complete, and the
    # call returns after the drain's second. Without the drain's bound it would wait out the
    # model's read timeout, an hour, and the hang bound below would end the test as a failure.
    chunk = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]})
    listener = socket.create_server(("127.0.0.1", 0))
    release = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(body) < length:
                body += connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            for event in (f"data: {chunk}\n\n".encode(), b"data: [DONE]\n\n"):
                connection.sendall(b"%x\r\n%s\r\n" % (len(event), event))
            release.wait(120)  # the body's last chunk never comes

    threading.Thread(target=serve, daemon=True).start()
    model = create_chat_model("m", config=parse_config(f"""
models:
  - name: m
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: http://127.0.0.1:{listener.getsockname()[1]}/v1
    api_key: k
    max_retries: 0
    timeout: 3600
"""))
    answer: list[str] = []
    done = threading.Event()

    def call() -> None:
        answer.append("".join(c.content for c in model.stream("hi")))
        done.set()

    threading.Thread(target=call, daemon=True).start()
    done.wait(HANG_SECONDS)
    release.set()
    listener.close()
    assert answer == ["done"]


_EXITING = """
import asyncio
from harness.testing import LoopbackOpenAIServer, Reply
from tests.harness.models.test_loop_connections import _model

with LoopbackOpenAIServer([Reply(text="hello")], loop=True) as server:
    model = _model(server, 38)

    async def ask():
        return "".join([chunk.content async for chunk in model.astream("hi")])

    answers = [asyncio.run(ask()), asyncio.run(ask())]  # the embedded client's way: the last loop closed
    answers.append(asyncio.new_event_loop().run_until_complete(ask()))  # a loop left open
    print(answers)
"""


def test_a_process_that_called_models_exits_without_an_unclosed_session():
    done = subprocess.run([sys.executable, "-c", _EXITING], check=False, capture_output=True, text=True, timeout=HANG_SECONDS,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['hello', 'hello', 'hello']"
    assert "Unclosed" not in done.stderr, done.stderr
