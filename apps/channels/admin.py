"""Operators' view of IM channels: who is connected (revoke), which chats map to which
thread, and what each channel's worker last reported."""

from django.contrib import admin, messages
from django.utils.html import format_html

from apps.channels.models import ChannelConnection, ChannelConversation, ChannelDelivery, ChannelStatus, ConnectCode
from apps.channels.selectors import login_qr


@admin.register(ChannelConnection)
class ChannelConnectionAdmin(admin.ModelAdmin):
    list_display = ["provider", "display_name", "external_id", "workspace", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["provider", ("revoked_at", admin.EmptyFieldListFilter), "created_at"]
    search_fields = ["external_id", "display_name", "user__username", "user__email"]
    readonly_fields = ["user", "provider", "workspace", "external_id", "display_name", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False  # a binding is made by its user sending a code, never typed in here

    @admin.action(description="Revoke selected connections (their messages get the connect hint)")
    def revoke(self, request, queryset):
        from apps.channels.connections import connection_revoke

        live = list(queryset.filter(revoked_at__isnull=True))
        for connection in live:
            connection_revoke(connection=connection)
        self.message_user(request, f"{len(live)} connection(s) revoked.", level=messages.SUCCESS)


@admin.register(ChannelConversation)
class ChannelConversationAdmin(admin.ModelAdmin):
    list_display = ["provider", "chat", "topic", "workspace", "user", "thread", "updated_at"]
    list_filter = ["provider"]
    search_fields = ["chat", "topic", "user__username", "thread__id"]
    readonly_fields = ["user", "connection", "provider", "workspace", "chat", "topic", "thread", "created_at", "updated_at"]
    list_select_related = ["user", "thread"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ChannelStatus)
class ChannelStatusAdmin(admin.ModelAdmin):
    """Written by the channels worker (``manage.py run_channels``); read-only here."""

    list_display = ["provider", "state", "connected", "bot_name", "last_event_at", "last_error_at", "short_error", "detail", "process",
                    "updated_at"]
    readonly_fields = ["provider", "state", "detail", "login_qr_code", "bot_name", "process", "last_event_at", "last_error",
                       "last_error_at", "cursor", "updated_at"]

    @admin.display(boolean=True, description="connected")
    def connected(self, obj) -> bool:
        return obj.state == "connected"

    @admin.display(description="login QR code")
    def login_qr_code(self, obj) -> str:
        """The code the platform waits for an operator to scan (WeChat), as on the Connections page."""
        if not obj.login_qr:
            return "—"
        return format_html('<img src="{}" alt="login QR code" width="200" height="200">', login_qr(obj.login_qr)["image"])

    @admin.display(description="last error")
    def short_error(self, obj) -> str:
        return (obj.last_error[:120] + "…") if len(obj.last_error) > 120 else obj.last_error

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ConnectCode)
class ConnectCodeAdmin(admin.ModelAdmin):
    list_display = ["provider", "user", "created_at", "expires_at", "used_at", "connection"]
    list_filter = ["provider"]
    readonly_fields = ["user", "provider", "digest", "created_at", "expires_at", "used_at", "connection"]
    list_select_related = ["user", "connection"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ChannelDelivery)
class ChannelDeliveryAdmin(admin.ModelAdmin):
    """Scheduled results posted to a connection (the channels worker sends pending ones)."""

    list_display = ["run_id", "connection", "status", "attempts", "created_at", "sent_at", "error"]
    list_filter = ["status"]
    readonly_fields = ["connection", "run_id", "task_id", "status", "attempts", "error", "created_at", "sent_at"]
    list_select_related = ["connection"]

    def has_add_permission(self, request) -> bool:
        return False
