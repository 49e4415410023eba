"""config.yaml and extensions_config.json: env resolution, validation messages, reload."""

import json
import os

import pytest

from harness.config import ConfigError, get_app_config, get_extensions_config, parse_config, reset_config_cache
from harness.config.env import MissingEnvVar, resolve_tree

OPENAI = "langchain_openai:ChatOpenAI"


@pytest.fixture(autouse=True)
def _fresh_cache():
    reset_config_cache()
    yield
    reset_config_cache()


def test_env_references_resolve_in_every_form(monkeypatch):
    monkeypatch.setenv("DF_A", "alpha")
    monkeypatch.delenv("DF_MISSING", raising=False)
    tree = {"a": "$DF_A", "b": "${DF_A}", "c": "${DF_MISSING:-fallback}", "d": ["x", "$DF_A"], "e": "pa$$word", "f": 3}
    assert resolve_tree(tree) == {"a": "alpha", "b": "alpha", "c": "fallback", "d": ["x", "alpha"], "e": "pa$$word", "f": 3}
    with pytest.raises(MissingEnvVar) as err:
        resolve_tree({"outer": {"inner": "$DF_MISSING"}})
    assert err.value.field == "outer.inner" and err.value.var == "DF_MISSING"


def test_model_kwargs_come_from_env_and_extra_keys(monkeypatch):
    monkeypatch.setenv("DF_KEY", "sk-test")
    config = parse_config(f"models:\n  - name: m\n    use: {OPENAI}\n    model: gpt-x\n    api_key: $DF_KEY\n    temperature: 0.3\n    max_tokens: 100\n    context_window: 8000\n")
    model = config.get_model("m")
    assert model.unavailable_reason is None
    assert model.constructor_kwargs() == {"model": "gpt-x", "api_key": "sk-test", "temperature": 0.3, "max_tokens": 100}
    assert config.get_model() is model and config.get_model("other") is None


def test_missing_env_var_keeps_the_model_listed_but_unusable(monkeypatch):
    monkeypatch.delenv("DF_NOPE", raising=False)
    config = parse_config(f"models:\n  - name: m\n    use: {OPENAI}\n    api_key: $DF_NOPE\n", "cfg.yaml")
    assert config.models[0].unavailable_reason == "cfg.yaml: models[0].api_key: environment variable DF_NOPE is not set"


def test_missing_env_var_outside_models_is_an_error_naming_the_field(monkeypatch):
    monkeypatch.delenv("DF_NOPE", raising=False)
    with pytest.raises(ConfigError) as err:
        parse_config("channels:\n  enabled: true\n  telegram_token: $DF_NOPE\n", "cfg.yaml")
    assert str(err.value) == "cfg.yaml: channels.telegram_token: environment variable DF_NOPE is not set"


def test_a_channel_whose_credential_variable_is_unset_stays_off_with_the_reason(monkeypatch):
    monkeypatch.delenv("DF_NOPE", raising=False)
    config = parse_config("channels:\n  enabled: true\n  telegram:\n    enabled: true\n    bot_token: $DF_NOPE\n", "cfg.yaml")
    section = config.channels.model_extra["telegram"]
    assert section["unavailable_reason"] == "channels.telegram.bot_token: environment variable DF_NOPE is not set"
    assert "bot_token" not in section


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (f"models:\n  - name: m\n    use: {OPENAI}\n    max_tokens: lots\n", "models[0].max_tokens", "valid integer"),
        ("models:\n  - name: m\n    use: langchain_nowhere:Chat\n", "models[0].use", "pip install langchain-nowhere"),
        ("models:\n  - name: m\n    use: langchain_openai:NoSuchClass\n", "models[0].use", "has no attribute 'NoSuchClass'"),
        ("models:\n  - name: m\n    use: json:JSONDecoder\n", "models[0].use", "not a LangChain chat model"),
        ("models:\n  - name: m\n    use: not a path\n", "models[0].use", "package.module:ClassName"),
        ("sandbox:\n  bash_command_timeout: -5\n", "sandbox.bash_command_timeout", "greater than 0"),
        ("title:\n  enabeld: true\n", "title.enabeld", "unknown key"),
        ("memory:\n  fact_confidence_threshold: 2\n", "memory.fact_confidence_threshold", "less than or equal to 1"),
        ("tools:\n  - name: t\n    group: web\n    use: x.y:z\ntool_groups:\n  - name: file\n", "(top level)", "group 'web'"),
        (f"models:\n  - name: a\n    use: {OPENAI}\n  - name: a\n    use: {OPENAI}\n", "(top level)", "unique"),
        ("summarization:\n  model_name: ghost\n", "(top level)", "'ghost' is not one of the configured models"),
    ],
)
def test_invalid_values_are_rejected_with_file_field_and_reason(text, field, reason):
    with pytest.raises(ConfigError) as err:
        parse_config(text, "cfg.yaml")
    message = str(err.value)
    assert message.startswith(f"cfg.yaml: {field}: "), message
    assert reason in message
    assert "\n" not in message


def test_bad_yaml_names_the_line():
    with pytest.raises(ConfigError, match=r"^cfg.yaml: invalid YAML: line 2, column"):
        parse_config("title:\n\tmax_words: 5\n", "cfg.yaml")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        parse_config("- just\n- a list\n", "cfg.yaml")


def test_reload_on_content_change_even_when_mtime_is_unchanged(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("title:\n  max_words: 5\n")
    stat = path.stat()
    first = get_app_config(path)
    assert first.title.max_words == 5
    assert get_app_config(path) is first  # unchanged content: the cached object

    path.write_text("title:\n  max_words: 7\n")  # same length, same mtime below
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert get_app_config(path).title.max_words == 7


def test_a_server_looks_at_the_file_once_per_recheck_interval(tmp_path):
    from harness.config.loader import set_recheck_seconds

    path = tmp_path / "config.yaml"
    path.write_text("title:\n  max_words: 5\n")
    set_recheck_seconds(60)
    try:
        first = get_app_config(path)
        path.write_text("title:\n  max_words: 9\n")
        assert get_app_config(path) is first  # within the interval: the file is not read
        reset_config_cache()
        assert get_app_config(path).title.max_words == 9  # a reset looks again at once
    finally:
        set_recheck_seconds(0)
    path.write_text("title:\n  max_words: 11\n")
    assert get_app_config(path).title.max_words == 11  # no interval: every call looks


def test_config_path_from_environment_and_defaults_when_missing(tmp_path, monkeypatch):
    path = tmp_path / "elsewhere.yaml"
    path.write_text("subagents:\n  max_concurrent: 7\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    assert get_app_config().subagents.max_concurrent == 7
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(tmp_path / "absent.yaml"))
    assert get_app_config().models == []


def test_a_broken_edit_is_reported_and_fixing_it_recovers(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("title:\n  max_words: 5\n")
    assert get_app_config(path).title.max_words == 5
    path.write_text("title:\n  max_words: five\n")
    with pytest.raises(ConfigError, match="title.max_words"):
        get_app_config(path)
    path.write_text("title:\n  max_words: 6\n")
    assert get_app_config(path).title.max_words == 6


def test_example_config_is_valid():
    from harness.config import load_config
    from harness.config.paths import REPO_ROOT

    config = load_config(REPO_ROOT / "config.example.yaml")
    assert config.models and config.models[0].use == OPENAI


def test_extensions_config(tmp_path, monkeypatch):
    path = tmp_path / "extensions_config.json"
    assert get_extensions_config(path).mcp_servers == {}  # a missing file means no extensions
    monkeypatch.setenv("DF_GH", "ghp_secret")
    path.write_text(json.dumps({
        "mcpServers": {"gh": {"type": "stdio", "command": "npx", "args": ["srv"], "env": {"TOKEN": "$DF_GH"}}},
        "skills": {"deep-research": {"enabled": False}},
    }))
    config = get_extensions_config(path)
    assert config.mcp_servers["gh"].env == {"TOKEN": "ghp_secret"}
    assert config.skills["deep-research"].enabled is False

    path.write_text(json.dumps({"mcpServers": {"web": {"type": "sse"}}}))
    with pytest.raises(ConfigError, match=r"mcpServers.web: .*needs 'url'"):
        get_extensions_config(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="invalid JSON: line 1"):
        get_extensions_config(path)


def test_extensions_config_round_trips_atomically(tmp_path):
    from harness.config import ExtensionsConfig, save_extensions_config
    from harness.config.extensions import parse_extensions

    path = tmp_path / "ext.json"
    config = parse_extensions(json.dumps({"mcpServers": {"h": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}), resolve_env=False)
    save_extensions_config(config, path)
    assert [p.name for p in tmp_path.iterdir()] == ["ext.json"]  # no temp file left behind
    assert get_extensions_config(path) == config
    assert isinstance(config, ExtensionsConfig)


# -- settings of features that have not landed --------------------------------------------


def test_the_example_config_loads_without_a_warning(caplog):
    from harness.config.paths import REPO_ROOT

    with caplog.at_level("WARNING", logger="harness.config.loader"):
        get_app_config(REPO_ROOT / "config.example.yaml")
    # The config loader's own warnings: a background poller another test started may log too.
    assert not [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name.startswith("harness.config")]
