"""The live stacks of tests/support/live.py on a busy machine: a port chosen free and taken by
someone else before the server bound it (another xdist worker's server) does not leave the
test talking to the wrong server."""

import http.server
import threading
import urllib.request

import pytest

from harness.testing import loopback_config_text
from tests.support import live
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.slow]


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Another stack's server on the port: healthy, and not ours."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"status": "ok"}')

    def log_message(self, *args):
        pass


def test_a_live_server_whose_port_was_taken_starts_on_another(tmp_path, model_server, monkeypatch):
    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    taken = impostor.server_address[1]
    ports = iter([taken])
    real_free_port = live.free_port
    monkeypatch.setattr(live, "free_port", lambda: next(ports, None) or real_free_port())
    server = live.start_live_server(tmp_path / "home", config_text=loopback_config_text(model_server.base_url))
    try:
        assert server.url != f"http://127.0.0.1:{taken}"
        assert "Address already in use" in server.log()
        with urllib.request.urlopen(f"{server.url}/api/health", timeout=HANG_SECONDS) as response:
            assert response.status == 200
        assert server.process.poll() is None
    finally:
        server.stop()
        impostor.shutdown()
        impostor.server_close()
