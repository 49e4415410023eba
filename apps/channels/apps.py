from django.apps import AppConfig


class ImChannelsConfig(AppConfig):
    """The IM channels app.

    Its label stays ``integrations``, the label it had before it was split from the MCP
    settings: Django Channels (the ``channels`` package) already owns the label ``channels``,
    and keeping the old one keeps the migration history, content types, permissions and the
    admin's ``/admin/integrations/...`` URLs exactly as they were.
    """

    name = "apps.channels"
    label = "integrations"
    verbose_name = "IM channels"
