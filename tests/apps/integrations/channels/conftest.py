import os
from pathlib import Path

import pytest
import yaml


@pytest.fixture
def channels_config(tmp_path, monkeypatch):
    """Write a config.yaml whose ``channels:`` section is the given mapping; returns a setter."""

    def write(**providers):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base["channels"] = {"enabled": True, **providers}
        path = tmp_path / "config-channels.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        return path

    return write


@pytest.fixture
async def channel_layer():
    """The in-memory channel layer, emptied so a previous test's loop-bound queues are gone."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    await layer.flush()
    yield layer
    await layer.flush()
