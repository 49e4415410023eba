from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import PersonalAccessToken, User

admin.site.register(User, UserAdmin)


@admin.register(PersonalAccessToken)
class PersonalAccessTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "prefix", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["name", "prefix", "owner__username", "owner__email"]
    # The digest never leaves the database; tokens are issued through the UI/API only.
    exclude = ["digest"]
    readonly_fields = ["owner", "prefix", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).")
