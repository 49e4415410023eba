"""Real MCP servers for the tests, written with FastMCP.

Run as a script it serves over stdio: ``python servers.py stdio <kind>``. ``serve_http``
starts the same tools over streamable HTTP on a loopback port in a thread."""

import os
import subprocess
import sys
import threading
import time

from mcp.server.fastmcp import FastMCP


def build(kind: str = "calc", **settings) -> FastMCP:
    server = FastMCP(f"test-{kind}", **settings)

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return f"sum={a + b}"

    @server.tool()
    def env_report(name: str) -> str:
        """The value of an environment variable in the server, or <unset>."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def where() -> str:
        """The server's working and temp directories."""
        return f"cwd={os.getcwd()} tmp={os.environ.get('TMPDIR', '')}"

    @server.tool()
    def echo_path(path: str) -> str:
        """Write a file at path and return the path."""
        with open(path, "w") as fh:
            fh.write("made by MCP")
        return f"wrote {path}"

    @server.tool()
    def hang(pid_file: str) -> str:
        """Never answers; records its own pid and a child's pid first."""
        child = subprocess.Popen(["sleep", "600"])
        with open(pid_file, "w") as fh:
            fh.write(f"{os.getpid()} {child.pid}")
        time.sleep(3600)
        return "unreachable"

    if kind == "stateful":
        counter = {"n": 0}

        @server.tool()
        def count() -> str:
            """Add one to this process's counter and report it with where the process runs."""
            counter["n"] += 1
            return f"count={counter['n']} pid={os.getpid()} cwd={os.getcwd()} tmp={os.environ.get('TMPDIR', '')}"

        @server.tool()
        def die(last_words: str) -> str:
            """Write last_words to stderr and exit mid-call."""
            sys.stderr.write(f"{last_words}\n")
            sys.stderr.flush()
            os._exit(7)

    if kind == "secret":
        @server.tool()
        def vault_lookup(key: str) -> str:
            """Look up a key in the vault."""
            return f"vault:{key}"

    return server


def serve_http(kind: str = "calc", *, auth_check=None, transport: str = "http"):
    """Start streamable HTTP (or SSE) on 127.0.0.1 in a daemon thread; return (url, stop)."""
    import socket

    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server_app = build(kind, host="127.0.0.1", port=port)
    app = server_app.sse_app() if transport == "sse" else server_app.streamable_http_app()
    if auth_check is not None:
        app = auth_check(app)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)

    def stop():
        server.should_exit = True
        server.force_exit = True  # do not wait for the client's open stream
        thread.join(10)

    return f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}", stop


if __name__ == "__main__":
    mode, kind = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "calc"
    if kind == "crash":
        sys.stderr.write("boom: this server cannot start\n")
        sys.exit(3)
    if kind == "noisy-crash":  # a long stderr: only its end may reach an error message
        for i in range(3000):
            sys.stderr.write(f"noise line {i}\n")
        sys.stderr.write("last words: the config file is missing\n")
        sys.exit(4)
    build(kind).run("stdio")
