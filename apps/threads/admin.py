from django.contrib import admin, messages

from apps.threads.models import Feedback, Thread


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "owner", "status", "assistant_id", "updated_at", "created_at"]
    list_filter = ["status", "assistant_id", "created_at"]
    search_fields = ["id", "title", "owner__username", "owner__email"]
    readonly_fields = ["id", "created_at", "updated_at"]
    date_hierarchy = "created_at"
    list_select_related = ["owner"]
    actions = ["mark_idle"]

    @admin.action(description="Mark selected threads idle (stuck after a lost run)")
    def mark_idle(self, request, queryset):
        from apps.threads.services import thread_mark_idle
        from apps.errors import DomainError

        freed = 0
        for thread in queryset:
            try:
                freed += thread_mark_idle(thread=thread)
            except DomainError as exc:
                self.message_user(request, exc.detail, level=messages.WARNING)
        self.message_user(request, f"{freed} thread(s) marked idle.")


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ["created_at", "owner", "rating", "short_comment", "thread", "run"]
    list_filter = ["rating", "created_at", "run__model_name"]
    date_hierarchy = "created_at"
    search_fields = ["comment", "thread__id", "owner__username", "message_id"]
    readonly_fields = ["thread", "run", "owner", "message_id", "rating", "comment", "created_at", "updated_at"]
    list_select_related = ["owner", "thread", "run"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a user's words: shown, never edited by an operator

    @admin.display(description="Comment")
    def short_comment(self, obj: Feedback) -> str:
        return obj.comment if len(obj.comment) <= 80 else obj.comment[:79] + "…"
