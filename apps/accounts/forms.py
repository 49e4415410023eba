"""allauth form tweaks: plain labels for the sign-in form (ACCOUNT_FORMS in settings/auth.py)."""

from allauth.account.forms import LoginForm as AllauthLoginForm


class LoginForm(AllauthLoginForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # allauth labels the field "Login"; people look for what to type.
        self.fields["login"].label = "Username or email"
        if "remember" in self.fields:
            self.fields["remember"].label = "Remember me"
