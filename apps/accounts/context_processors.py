"""Template context for account links: whether sign-up is open, and whether the server still
needs its first admin. Callables, so the query runs only on pages that use them."""

from apps.accounts import selectors


def accounts(request):
    return {
        "account_signup_open": selectors.signup_is_open,
        "account_needs_admin": lambda: not selectors.superuser_exists(),
    }
