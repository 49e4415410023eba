from django.contrib import admin

from apps.threads.models import Feedback, Thread


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "owner", "status", "assistant_id", "updated_at", "created_at"]
    list_filter = ["status", "assistant_id", "created_at"]
    search_fields = ["id", "title", "owner__username", "owner__email"]
    readonly_fields = ["id", "created_at", "updated_at"]
    date_hierarchy = "created_at"
    list_select_related = ["owner"]


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ["run", "thread", "owner", "rating", "message_id", "created_at"]
    list_filter = ["rating", "created_at"]
    search_fields = ["comment", "thread__id", "owner__username", "message_id"]
    readonly_fields = ["thread", "run", "owner", "message_id", "rating", "comment", "created_at", "updated_at"]
    list_select_related = ["owner", "thread", "run"]

    def has_add_permission(self, request) -> bool:
        return False
