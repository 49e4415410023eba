"""Browser account pages under /accounts/: allauth's (sign-in, sign-up, password, OIDC) and tokens."""

from django.urls import include, path

from apps.accounts import views

urlpatterns = [
    path("tokens/", views.tokens_page, name="account_tokens"),
    path("", include("allauth.urls")),
]
