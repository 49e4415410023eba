"""The sandbox environment is built from an allow-list, not the server's environment minus secrets."""

from __future__ import annotations

import pytest

from harness.sandbox.env_policy import build_sandbox_env
from tests.harness.sandbox.conftest import make_provider

# What a command may see without any operator configuration: the sandbox's own settings
# plus the locale/terminal names copied from the server.
ALLOWED = {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "PWD", "LANG", "LANGUAGE", "TZ", "TERM",
           "SHLVL", "_", "OLDPWD"}


def test_command_sees_only_allow_listed_names(provider_kind, home, skills_dir, monkeypatch):
    for name, value in {"DJANGO_SETTINGS_MODULE": "deerflow_site.settings", "PORT": "8000",
                        "DEERFLOW_ALLOW_SIGNUP": "1", "PIP_INDEX_URL": "https://mirror.example/simple",
                        "HOSTNAME": "container-42", "ORDINARY_SETTING": "x", "LANG": "C.UTF-8", "TZ": "UTC",
                        "LC_ALL": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    provider = make_provider(provider_kind, skills_dir)
    sandbox = provider.get(provider.acquire("alice", "t-env"))
    result = sandbox.execute_command("env -0 | tr '\\0' '\\n' | grep -o '^[A-Za-z_][A-Za-z0-9_]*='", env={"ERP_TOKEN": "v"})
    names = {n.rstrip("=") for n in result.output.render().split()}
    assert "DJANGO_SETTINGS_MODULE" not in names and "PORT" not in names and "PIP_INDEX_URL" not in names
    assert "DEERFLOW_ALLOW_SIGNUP" not in names and "HOSTNAME" not in names and "ORDINARY_SETTING" not in names
    assert {"PATH", "HOME", "LANG", "TZ", "TMPDIR", "LC_ALL", "ERP_TOKEN"} <= names
    assert names - ALLOWED - {"LC_ALL", "ERP_TOKEN"} == set()


def test_operator_configured_variables_reach_the_command(provider_kind, home, skills_dir, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-stay-out")
    provider = make_provider(provider_kind, skills_dir, env={"TOOLCHAIN_HOME": "/opt/tools"},
                             env_passthrough=["PIP_INDEX_URL", "OPENAI_API_KEY"])
    sandbox = provider.get(provider.acquire("alice", "t-env2"))
    out = sandbox.execute_command("echo T=$TOOLCHAIN_HOME P=$PIP_INDEX_URL K=$OPENAI_API_KEY").output.render()
    assert "T=/opt/tools" in out
    assert "P=https://mirror.example/simple" in out
    # A pass-through name that looks like a secret is still dropped: name it in `env` on purpose instead.
    assert "K=\n" in out or out.rstrip().endswith("K=")


def test_build_env_ignores_unlisted_server_names():
    built = build_sandbox_env({"REQ": "r"}, base={"PATH": "/bin", "PORT": "80", "LC_CTYPE": "C", "API_KEY": "k"},
                              overrides={"HOME": "/tmp"}, extra={"OP": "o"}, passthrough=("PORT", "API_KEY"))
    # PATH, HOME and TMPDIR come from the provider (overrides), never from the server.
    assert built == {"LC_CTYPE": "C", "PORT": "80", "HOME": "/tmp", "OP": "o", "REQ": "r"}


def test_passthrough_names_are_validated():
    from harness.config.app_config import SandboxConfig

    with pytest.raises(ValueError):
        SandboxConfig(env_passthrough=["BAD NAME"])
    with pytest.raises(ValueError):
        SandboxConfig(env={"X": "a\x00b"})
