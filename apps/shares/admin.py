from django.contrib import admin

from apps.shares.models import Share


@admin.register(Share)
class ShareAdmin(admin.ModelAdmin):
    list_display = ("title", "owner", "thread", "include_files", "created_at", "revoked_at")
    list_filter = ("include_files", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("title", "owner__username", "thread__id")
    raw_id_fields = ("owner", "thread")
    readonly_fields = ("id", "owner", "thread", "title", "messages", "files", "token_digest", "created_at")
    fields = ("id", "owner", "thread", "title", "include_files", "files", "messages", "token_digest", "created_at", "revoked_at")
