from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "apps.console"
    label = "console"
    verbose_name = "Console"

    def ready(self) -> None:
        from apps.accounts.settings_hub import SettingsSection, register_section

        register_section(SettingsSection("usage", "Usage", "Your tokens and cost by day, model and chat, and your budget.",
                                         "chart-column", "/usage/", order=80))
