"""Tracing tests' config.yaml: both backends on, at loopback stand-ins."""

from pathlib import Path

import pytest

from harness.config.loader import reset_config_cache

FIXTURE_CONFIG = Path(__file__).resolve().parents[2] / "fixtures" / "config.yaml"
LANGSMITH_KEY = "lsv2_sk_fake_key_0042"
LANGFUSE_SECRET = "sk-lf-fake-secret-0042"
OTLP_PATH = "/api/public/otel/v1/traces"


@pytest.fixture
def traced_config(tmp_path, monkeypatch):
    """config.yaml with both backends on, at the URLs given."""

    def write(langsmith_url: str, langfuse_url: str):
        path = tmp_path / "config.yaml"
        path.write_text(FIXTURE_CONFIG.read_text() + (
            "tracing:\n"
            "  langsmith:\n"
            f"    endpoint: {langsmith_url}\n"
            "    api_key: $TEST_LANGSMITH_KEY\n"
            "    project: obs-tests\n"
            "  langfuse:\n"
            f"    host: {langfuse_url}\n"
            f"    public_key: pk-lf-{tmp_path.name[-12:]}\n"
            "    secret_key: $TEST_LANGFUSE_SECRET\n"
        ))
        monkeypatch.setenv("TEST_LANGSMITH_KEY", LANGSMITH_KEY)
        monkeypatch.setenv("TEST_LANGFUSE_SECRET", LANGFUSE_SECRET)
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        reset_config_cache()

    yield write
    reset_config_cache()
