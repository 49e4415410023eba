"""Admin for users and tokens. The admin's sign-in goes through allauth, so it shares the login
rate limits and the one sign-in page instead of being a second, unthrottled door."""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.utils import timezone

from apps.accounts.models import PersonalAccessToken, User

admin.site.login = secure_admin_login(admin.site.login)


class PersonalAccessTokenInline(admin.TabularInline):
    """A user's tokens on their admin page: what exists and when it was used, never the digest."""

    model = PersonalAccessToken
    fields = ["name", "prefix", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(User)
class DeerFlowUserAdmin(UserAdmin):
    inlines = [PersonalAccessTokenInline]


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
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).")
