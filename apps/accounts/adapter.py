"""allauth adapters: the sign-up switch and the first-admin rule, for local and social sign-ups."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter

from apps.accounts import selectors, services


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return selectors.signup_is_open()

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=False)
        if commit:
            # A form may ask for the first-run setup only (apps.accounts.deerflow_auth's initialize).
            services.user_signup_save(user=user, first_admin_only=getattr(form, "first_admin_only", False))
        return user


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    # is_open_for_signup defers to AccountAdapter: the same switch governs OpenID Connect sign-ups.

    def save_user(self, request, sociallogin, form=None):
        # allauth saves the user inside sociallogin.save(); run that under the first-admin rule.
        parent = super().save_user
        services.user_signup_save(user=sociallogin.user, save=lambda: parent(request, sociallogin, form))
        return sociallogin.user
