"""DeerFlow's config.yaml and extensions_config.json load unchanged: each DeerFlow key is honoured,
mapped (and said where to), or accepted and reported once with the reason it has no effect;
a key neither schema knows, or a deerflow.* class path with no equivalent, is still an error."""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.config import ConfigError, parse_config
from harness.config.deerflow_compat import ACCEPTED, DEERFLOW_SCHEMA_VERSION, MAPPED
from harness.config.extensions import parse_extensions
from harness.config.paths import REPO_ROOT
from harness.config.report import build_report
from harness.config.upgrade import upgrade_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "deerflow_style"
CONFIG = FIXTURES / "config.yaml"
EXTENSIONS = FIXTURES / "extensions_config.json"

# Keys the issue names as refused or silently ignored before; each must now be reported.
NAMED_IN_THE_ISSUE = [
    "database.backend", "checkpointer.type", "logging.enhance", "run_events.backend", "stream_bridge.type",
    "token_usage.enabled",
    "authorization.enabled", "extensions.middlewares", "title.prompt_template",
    "channels.langgraph_url", "channels.gateway_url",
]
# Keys once accepted with no effect that the channels now honour (apps/channels, docs/channels.md).
HONOURED_CHANNEL_KEYS = ["channels.session", "channels.telegram.rich_messages", "channels.dingtalk.card_template_id",
                         "channels.telegram.allowed_users", "channels.dingtalk.allowed_users", "channels.wechat"]


def _load():
    return parse_config(CONFIG.read_text(), str(CONFIG)), parse_extensions(EXTENSIONS.read_text(), str(EXTENSIONS))


def test_the_deerflow_style_config_loads_and_reports_each_accepted_key_once():
    config, extensions = _load()
    notes = config.compat_notes + extensions.compat_notes
    counts = Counter((n.key, n.kind) for n in notes)
    assert [k for k, c in counts.items() if c > 1] == []
    accepted = {n.key for n in config.compat_notes if n.kind == ACCEPTED}
    assert [k for k in NAMED_IN_THE_ISSUE if k not in accepted] == []
    assert [k for k in HONOURED_CHANNEL_KEYS if k in accepted] == []
    assert config.channels.session.assistant_id == "lead_agent"
    assert config.channels.model_extra["telegram"]["rich_messages"] is False and "wechat" in config.channels.model_extra
    # The container provider's keys are honoured, not merely accepted.
    sandbox = config.sandbox
    assert (sandbox.image, sandbox.replicas, sandbox.idle_timeout, sandbox.container_prefix) == ("example/sandbox:latest", 2, 600, "df-sandbox")
    assert [(m.host_path, m.container_path, m.read_only) for m in sandbox.mounts] == [("/opt/data", "/mnt/data", True)]
    assert not {"sandbox.image", "sandbox.replicas", "sandbox.idle_timeout", "sandbox.mounts"} & accepted
    assert all(n.detail for n in notes)
    ext_accepted = {n.key for n in extensions.compat_notes if n.kind == ACCEPTED}
    assert {"tool_search", "mcpInterceptors", "mcpServers.files.routing.hint",
            "mcpServers.files.tool_name_prefix"} <= ext_accepted
    # routing.mode/priority/keywords and tool_search.auto_promote_top_k are honoured
    assert not {"mcpServers.files.routing.mode", "mcpServers.files.routing.priority"} & ext_accepted
    assert "tool_search.auto_promote_top_k" not in {n.key for n in config.compat_notes}
    files = extensions.mcp_servers["files"]
    assert (files.routing.mode, files.routing.priority, files.routing.keywords) == ("prefer", 10, ["file"])
    assert files.effective_routing("read").priority == 20 and files.effective_routing("read").keywords == ["read"]
    report = build_report(config, extensions)
    assert len({n.key for n in report.accepted}) == len(report.accepted)


def test_mapped_keys_land_on_ours():
    config, extensions = _load()
    mapped = {n.key: n.detail for n in config.compat_notes if n.kind == MAPPED}
    assert config.models[0].use == "langchain_openai:ChatOpenAI" and "models[0].use" in mapped
    assert "supports_reasoning_effort" not in config.models[0].constructor_kwargs()
    assert config.memory.shutdown_flush_timeout_seconds == 12 and config.memory.tool_mode is False
    assert (config.memory.token_counting, config.memory.staleness_age_days, config.memory.staleness_min_candidates,
            config.memory.consolidation_min_facts) == ("char", 60, 2, 5)
    assert mapped["memory.backend_config.token_counting"] == "memory.token_counting"
    assert mapped["channels.github.default_mention_login"] == "channels.github.mention_login"
    assert config.channels.model_extra["github"]["mention_login"] == "deerflow-bot"
    honoured = {"memory.shutdown_flush_timeout_seconds", "memory.staleness_review_enabled", "memory.staleness_min_candidates",
                "memory.consolidation_enabled"}
    assert not honoured & {n.key for n in config.compat_notes}  # our own keys: nothing to say about them
    assert config.memory.debounce_seconds == 20 and config.memory.max_facts == 80
    assert config.sandbox.use == "local" and config.sandbox.max_output_chars == 18000
    assert config.sandbox.read_file_max_chars == 40000 and config.sandbox.env == {"DF_FIXTURE_MODE": "deerflow"}
    assert config.checkpoints.mode == "delta" and config.checkpoints.snapshot_frequency == 20
    assert config.uploads.convert_documents is False
    assert [(t.name, t.use, (t.model_extra or {}).get("provider")) for t in config.tools] == [
        ("web_search", "harness.tools.web:WebSearchTool", "ddgs"),
        ("web_fetch", "harness.tools.web:WebFetchTool", "jina"),
        ("image_search", "harness.tools.web:ImageSearchTool", "ddgs"),
    ]  # the sandbox tools are built in here: their entries are dropped, and said so
    assert mapped["tools[9] (bash)"].startswith("the built-in sandbox tool bash")
    assert config.subagents.types["researcher"].prompt.startswith("You research")
    assert config.summarization.trigger[0].type == "tokens"
    assert extensions.mcp_servers["files"].connect_timeout == 30
    assert config.config_version == DEERFLOW_SCHEMA_VERSION


def test_the_guard_sections_are_honoured_not_accepted():
    config, _ = _load()
    accepted = {n.key.partition(".")[0] for n in config.compat_notes if n.kind == ACCEPTED}
    guards = {"loop_detection", "tool_progress", "read_before_write", "safety_finish_reason", "token_budget", "tool_output"}
    assert accepted & guards == set()
    assert config.token_budget.max_tokens == 100000 and config.token_budget.warn_threshold == 0.75
    assert config.tool_progress.min_word_count_for_similarity == 5 and config.tool_progress.exempt_tools == set()
    assert config.tool_output.exempt_tools == ["read_file"] and config.loop_detection.hard_limit == 5
    assert config.read_before_write.enabled and config.safety_finish_reason.detectors is None


def test_the_subagent_keys_are_honoured_not_accepted():
    config, _ = _load()
    assert not [n.key for n in config.compat_notes if n.kind == ACCEPTED and n.key.startswith("subagents.")]
    sub = config.subagents
    assert sub.timeout_seconds == 600 and sub.max_turns == 20 and sub.token_budget.enabled is False
    researcher = sub.types["researcher"]
    assert researcher.disallowed_tools == ["bash"] and researcher.skills == [] and researcher.max_turns == 10
    # DeerFlow's defaults: 1800 s, the types' own turn limits, a 2M/1M token budget per task
    text = "subagents:\n  agents:\n    bash:\n      max_turns: 80\n      token_budget:\n        max_tokens: 3000000\n" \
           "  custom_agents:\n    analyst:\n      description: d\n      system_prompt: p\n      model: inherit\n"
    sub = parse_config(text).subagents
    assert sub.timeout_seconds == 1800 and sub.max_turns is None
    assert sub.types["analyst"].model is None and sub.types["analyst"].max_turns == 50 and sub.types["analyst"].timeout_seconds == 900
    assert sub.token_budget_for("general-purpose", summarization_enabled=True).max_tokens == 1_000_000
    assert sub.token_budget_for("general-purpose", summarization_enabled=False).max_tokens == 2_000_000
    assert sub.token_budget_for("bash", summarization_enabled=True).max_tokens == 3_000_000


def test_commented_out_sections_are_absent_not_errors():
    config = parse_config("models:\ntools:\nmemory:\nsandbox:\n  use: local\n")
    assert config.models == [] and config.tools == []


@pytest.mark.parametrize("text, field", [
    ("not_a_deerflow_key: 1\n", "not_a_deerflow_key"),
    ("database:\n  typo_backend: sqlite\n", "database.typo_backend"),
    ("memory:\n  enabledd: true\n", "memory.enabledd"),
    ("loop_detection:\n  warn_treshold: 3\n", "loop_detection.warn_treshold"),
])
def test_a_key_neither_schema_knows_is_still_refused_by_name(text, field):
    with pytest.raises(ConfigError) as err:
        parse_config(text, "cfg.yaml")
    assert err.value.field == field and field in str(err.value)


@pytest.mark.parametrize("text, path", [
    ("tools:\n  - name: web_search\n    use: deerflow.community.serper.tools:web_search_tool\n", "deerflow.community.serper.tools:web_search_tool"),
    ("sandbox:\n  use: deerflow.community.boxlite:BoxliteProvider\n", "deerflow.community.boxlite:BoxliteProvider"),
    ("memory:\n  manager_class: mymem.Manager\n", "mymem.Manager"),
    ("guardrails:\n  enabled: true\n  provider:\n    use: deerflow.guardrails.oap:PassportProvider\n", "deerflow.guardrails.oap:PassportProvider"),
    ("authorization:\n  enabled: true\n  provider:\n    use: deerflow.authz.rbac:RbacAuthorizationProvider\n", "deerflow.authz.rbac:RbacAuthorizationProvider"),
    ("models:\n  - name: m\n    use: deerflow.models.unknown:Nope\n", "deerflow.models.unknown:Nope"),
])
def test_a_deerflow_class_path_without_an_equivalent_says_what_to_use(text, path):
    with pytest.raises(ConfigError) as err:
        parse_config(text, "cfg.yaml")
    assert path in str(err.value) and "use" in err.value.reason


def test_a_tool_api_key_moves_to_the_web_provider():
    config = parse_config("tools:\n  - name: web_search\n    group: web\n    use: deerflow.community.tavily.tools:web_search_tool\n"
                          "    api_key: tv-key\n    max_results: 3\n")
    assert config.web.providers["tavily"]["api_key"] == "tv-key"
    assert config.tools[0].model_extra == {"provider": "tavily", "max_results": 3}


def test_deerflow_browser_tools_map_to_ours_with_their_launch_keys():
    config = parse_config(
        "tool_groups:\n  - name: browser\ntools:\n"
        "  - name: browser_navigate\n    group: browser\n    use: deerflow.community.browser_automation.tools:browser_navigate_tool\n"
        "    headless: true\n    timeout_ms: 15000\n    viewport_width: 1024\n    allow_private_addresses: true\n"
        "    cdp_url: http://127.0.0.1:9222\n"
        "  - name: browser_click\n    group: browser\n    use: deerflow.community.browser_automation.tools:browser_click_tool\n"
        "  - name: web_capture\n    group: browser\n    use: deerflow.community.browserless.tools:web_capture_tool\n"
        "    base_url: http://localhost:3032\n")
    assert [t.use for t in config.tools] == ["harness.tools.browser:BrowserNavigateTool", "harness.tools.browser:BrowserClickTool",
                                              "harness.tools.browser:WebCaptureTool"]
    assert config.tools[0].model_extra == {"timeout_ms": 15000, "viewport_width": 1024, "allow_private_addresses": True}
    notes = {n.key: n for n in config.compat_notes}
    assert notes["tools[0].cdp_url"].kind == ACCEPTED and "guard" in notes["tools[0].cdp_url"].detail
    assert notes["tools[0].headless"].kind == ACCEPTED and notes["tools[2].base_url"].kind == ACCEPTED

    from harness.tools.browser.tools import _settings

    settings = _settings(config)
    assert settings.timeout_ms == 15000 and settings.viewport == (1024, 720)
    assert settings.policy.allows(__import__("ipaddress").ip_address("10.1.2.3"))  # allow_private_addresses opens private ranges


def test_an_older_config_version_says_what_config_upgrade_would_add():
    text = "config_version: 3\nmodels: []\n"
    config = parse_config(text)
    report = build_report(config, raw_keys=["config_version", "models"])
    line = report.version_line()
    assert report.older and f"older than {DEERFLOW_SCHEMA_VERSION}" in line and "config_upgrade" in line
    assert "sandbox" in report.missing_sections and "models" not in report.missing_sections


def _manage(*args, env_extra=None, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_SETTINGS_MODULE", "PYTEST", "DEER_FLOW"))}
    env.update({"DJANGO_SETTINGS_MODULE": "deerflow_site.settings", "DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path),
                "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", **(env_extra or {})})
    return subprocess.run([sys.executable, str(REPO_ROOT / "manage.py"), "config_check", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


def test_config_check_lists_each_accepted_and_mapped_key(tmp_path):
    env = {"DEER_FLOW_CONFIG_PATH": str(CONFIG), "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(EXTENSIONS)}
    done = _manage(env_extra=env, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    config, extensions = _load()
    for note in config.compat_notes:
        prefix = f"  {note.key}: " if note.kind == ACCEPTED else f"  {note.key} -> "
        assert out.count(prefix) == 1, note.key
    assert "  extensions_config.json: mcpServers.files.routing.hint: " in out
    assert f"config_version {DEERFLOW_SCHEMA_VERSION}: current" in out


def test_config_check_fails_with_the_error(tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("memory:\n  enabledd: true\n")
    # The server refuses such a file at startup too, so the command may fail before it runs.
    done = _manage("--config", str(bad), env_extra={"DEER_FLOW_CONFIG_PATH": str(bad)}, tmp_path=tmp_path)
    assert done.returncode != 0
    assert "memory.enabledd" in done.stdout + done.stderr


def test_config_upgrade_adds_missing_sections_with_defaults_and_keeps_comments():
    example = ("# the version\nconfig_version: 7\n\n# models: samples\nmodels:\n  - name: sample\n\n"
               "# Memory, explained\nmemory:\n  enabled: true  # the example turns it on\n\n# Title\ntitle:\n  max_words: 3\n")
    user = "# my own comment\nconfig_version: 2   # old\ntitle:\n  max_words: 5  # mine\n"
    new, added = upgrade_text(user, example)
    assert added == ["memory"]  # list sections (models) are never added; title is there
    assert new.startswith("# my own comment\nconfig_version: 7   # old\ntitle:\n  max_words: 5  # mine\n")
    assert "# Memory, explained\nmemory:\n  enabled: false\n" in new  # the default, not the example's sample
    assert parse_config(new).memory.enabled is False
    assert upgrade_text(new, example) == (new, [])


def test_config_upgrade_adds_keys_missing_inside_sections_at_any_depth():
    example = ("config_version: 7\nsummarization:\n  enabled: true\n  # what to keep\n  keep:\n    type: messages\n    value: 9\n"
               "  model_name: x\nsandbox:\n  use: local\n  # seconds\n  bash_command_timeout: 5\ntitle:\n  enabled: true\n  max_words: 2\n")
    user = ("config_version: 1\nsummarization:\n  enabled: true  # on\n  keep:\n    type: tokens  # mine\n\n"
            "  # a trailing note of mine\nsandbox:\n  use: local\ntitle: {enabled: false}\n")
    new, added = upgrade_text(user, example)
    assert added == ["summarization.keep.value", "summarization.model_name", "sandbox.bash_command_timeout"]
    # The user's lines stay, in order, comments and all; the new keys come at the end of their mapping.
    assert "summarization:\n  enabled: true  # on\n  keep:\n    type: tokens  # mine\n    value: 20\n  model_name: null\n" in new
    assert "sandbox:\n  use: local\n  # seconds\n  bash_command_timeout: 600\n" in new  # the example's comment, the default value
    assert "title: {enabled: false}\n" in new  # flow style is left as written
    assert upgrade_text(new, example) == (new, [])


def test_an_upgraded_file_loads_to_the_settings_it_had():
    """Upgrading an old file with our own example adds only defaults, so nothing changes meaning."""
    example = (REPO_ROOT / "config.example.yaml").read_text()
    user = ("config_version: 3\nmemory:\n  enabled: true\n  max_facts: 50\nsandbox:\n  use: local\n  max_output_chars: 999\n"
            "summarization:\n  enabled: true\n  keep:\n    type: tokens\n    value: 3000\n")
    new, added = upgrade_text(user, example)
    assert "memory.injection_enabled" in added and "sandbox.max_memory_mb" in added and "web" in added
    before, after = parse_config(user).model_dump(), parse_config(new).model_dump()
    assert after.pop("config_version") == DEERFLOW_SCHEMA_VERSION and before.pop("config_version") == 3
    assert after == before


def test_manage_config_upgrade_writes_a_file_that_loads(tmp_path):
    target = tmp_path / "config.yaml"
    target.write_text("# keep me\nconfig_version: 1\nsandbox:\n  use: local\n")
    done = subprocess.run([sys.executable, str(REPO_ROOT / "manage.py"), "config_upgrade", "--config", str(target)],
                          env={**{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_SETTINGS_MODULE", "PYTEST", "DEER_FLOW"))},
                               "DJANGO_SETTINGS_MODULE": "deerflow_site.settings", "DJANGO_DEBUG": "true", "DEER_FLOW_HOME": str(tmp_path),
                               "DEER_FLOW_CONFIG_PATH": str(target), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith("# keep me\n") and f"config_version: {DEERFLOW_SCHEMA_VERSION}" in text
    assert (tmp_path / "config.yaml.bak").read_text() == "# keep me\nconfig_version: 1\nsandbox:\n  use: local\n"
    config = parse_config(text)
    assert config.config_version == DEERFLOW_SCHEMA_VERSION and config.sandbox.use == "local"


def test_guardrails_keys_are_ours_now():
    config, _ = _load()
    assert config.guardrails.enabled is False and config.guardrails.fail_closed is True
    assert not [n for n in config.compat_notes if n.key.startswith("guardrails")]
    # a third-party provider is loaded by its class path; not installed, the load says so
    with pytest.raises(ConfigError) as err:
        parse_config("guardrails:\n  enabled: true\n  provider:\n    use: aport_guardrails.providers.generic:OAPGuardrailProvider\n")
    assert err.value.field == "guardrails" and "pip install aport-guardrails" in str(err.value)


def test_the_builtin_allowlist_guardrail_becomes_approval_rules():
    config = parse_config("guardrails:\n  enabled: true\n  provider:\n    use: deerflow.guardrails.builtin:AllowlistProvider\n"
                          "    config:\n      allowed_tools: [read_file, bash]\n      denied_tools: [bash]\n"
                          "approvals:\n  rules:\n    - {name: mine, tool: read_file, action: ask}\n")
    policy = config.approvals.policy

    def action(tool):
        rule = policy.first_match(tool, {}, None)
        return rule.action if rule else "allow"

    assert action("bash") == "deny"  # denied wins, as in DeerFlow
    assert action("read_file") == "ask"  # allowed by the allowlist, and the file's own ask rule still asks
    assert action("web_search") == "deny"  # not in allowed_tools
    assert [r["name"] for r in config.approvals.rules][1] == "mine"
    assert any(n.key == "guardrails.provider" and n.kind == MAPPED for n in config.compat_notes)


@pytest.mark.parametrize("text,field", [
    ("auth:\n  oidc:\n    providers:\n      keycloak:\n        isuer: https://id.example\n", "auth.oidc.providers.keycloak.isuer"),
    ("auth:\n  local:\n    allow_registrations: false\n", "auth.local.allow_registrations"),
    ("channel_connections:\n  slack:\n    bot_token: x\n", "channel_connections.slack.bot_token"),
])
def test_a_misspelt_key_deep_inside_an_accepted_section_is_still_named(text, field):
    with pytest.raises(ConfigError) as refused:
        parse_config(text)
    assert field in str(refused.value)
    # Spelt right, the same places load (and say they have no effect here).
    fixed = parse_config("auth:\n  oidc:\n    providers:\n      keycloak:\n        issuer: https://id.example\n  local:\n    allow_registration: false\n"
                         "channel_connections:\n  telegram:\n    bot_username: deerbot\n")
    assert {n.key for n in fixed.compat_notes} >= {"auth.oidc", "auth.local", "channel_connections.telegram"}


def test_our_older_name_for_the_flush_bound_still_loads():
    config = parse_config("memory:\n  shutdown_flush_seconds: 3\n", "config.yaml")
    assert config.memory.shutdown_flush_timeout_seconds == 3
