from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "apps.agents"
    label = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        # Validate config.yaml once at startup so a broken file stops the server with a
        # clear message instead of failing the first run. Later edits are re-read per run.
        from apps.agents.selectors import run_agent_for_user
        from apps.agents.stores import DjangoAgentStore
        from apps.runs import lifecycle
        from harness.agents.custom import set_agent_store
        from harness.config import get_app_config

        set_agent_store(DjangoAgentStore())
        # A run's assistant_id names a custom agent: admission asks this app for its settings.
        lifecycle.agent_resolvers.register(run_agent_for_user)
        from harness.tools.web import check_web_tools

        # A web tool whose provider lacks its key stays listed as unavailable; building the
        # tools now puts that in the startup log rather than at the first search.
        check_web_tools(get_app_config())
        # DeerFlow keys that load but do nothing here: one warning (manage.py config_check explains).
        from harness.config import get_extensions_config
        from harness.config.report import log_startup_report

        try:
            extensions = get_extensions_config()
        except Exception:  # reported by the MCP app and config_check; not this hook's job
            extensions = None
        log_startup_report(get_app_config(), extensions)
