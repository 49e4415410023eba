"""Admin for users and tokens. The admin's sign-in goes through allauth, so it shares the login
rate limits and the one sign-in page instead of being a second, unthrottled door."""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin, messages
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
    list_display = ["username", "email", "is_active", "is_staff", "date_joined", "last_login"]
    actions = ["disable_users", "enable_users"]

    @admin.action(description="Disable selected users (and revoke their tokens)")
    def disable_users(self, request, queryset):
        from apps.accounts.services import user_set_active

        revoked = 0
        for user in queryset.exclude(pk=request.user.pk):
            revoked += user_set_active(user=user, active=False)
        if queryset.filter(pk=request.user.pk).exists():
            self.message_user(request, "You cannot disable your own account.", level=messages.WARNING)
        self.message_user(request, f"Disabled {queryset.exclude(pk=request.user.pk).count()} user(s); revoked {revoked} token(s).")

    @admin.action(description="Enable selected users")
    def enable_users(self, request, queryset):
        from apps.accounts.services import user_set_active

        for user in queryset:
            user_set_active(user=user, active=True)
        self.message_user(request, f"Enabled {queryset.count()} user(s).")


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
