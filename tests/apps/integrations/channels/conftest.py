"""Config for the Slack and GitHub channel tests: the suite's config.yaml with channels on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml


@pytest.fixture
def channels_config(tmp_path, monkeypatch):
    """Write ``channels`` (and the SSRF guard opened to loopback, where the fake platforms
    serve) into a copy of the suite's config; returns a function to rewrite it."""
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    path = tmp_path / "config-channels.yaml"

    def write(**providers):
        data = {**base, "web": {"allowed_private_networks": ["127.0.0.0/8"]},
                "channels": {"enabled": providers.pop("enabled", True), **providers}}
        path.write_text(yaml.safe_dump(data))
        return path

    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    write()
    return write
