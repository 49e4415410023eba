"""The real server started on DeerFlow's config.yaml and extensions_config.json (the
deerflow_style fixtures, unchanged) streams a run to its end."""

import shutil
from pathlib import Path

import pytest

from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "deerflow_style"


def test_a_server_on_the_deerflow_style_config_streams_a_run(tmp_path, model_server, script):
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(FIXTURES / "extensions_config.json", home / "extensions_config.json")
    server = start_live_server(home, config_text=(FIXTURES / "config.yaml").read_text(),
                               extra_env={"DEERFLOW_TEST_MODEL_URL": model_server.base_url})
    try:
        from langgraph_sdk import get_sync_client

        script("Answered under a DeerFlow config.")
        sdk = get_sync_client(url=f"{server.url}/api", headers={"Authorization": f"Bearer {server.create_user_token('df-user')}"})
        thread = sdk.threads.create()
        parts = list(sdk.runs.stream(thread["thread_id"], "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]},
                                     stream_mode=["values", "messages-tuple"]))
        assert parts[0].event == "metadata" and parts[-1].event == "end", [p.event for p in parts]
        values = [p.data for p in parts if p.event == "values"][-1]
        assert values["messages"][-1]["content"] == "Answered under a DeerFlow config."
        log = server.log_path.read_text(errors="replace")
        assert log.count("accepted with no effect here") == 1, log[-3000:]
    finally:
        server.stop()
