from django.apps import AppConfig


class SharesConfig(AppConfig):
    name = "apps.shares"
    label = "shares"
    verbose_name = "Shared chats"

    def ready(self) -> None:
        from apps.accounts.settings_hub import SettingsSection, register_section

        register_section(SettingsSection("shares", "Shared links", "Read-only links to snapshots of your chats: see them, open them, revoke them.",
                                         "globe", "/settings/shares", order=35))
