"""DeerFlow's sign-in API under /api/v1/auth/ (apps/accounts/deerflow_auth.py)."""

from django.urls import path

from apps.accounts import deerflow_auth as views

urlpatterns = [
    path("setup-status", views.SetupStatusView.as_view(), name="deerflow-auth-setup-status"),
    path("providers", views.ProvidersView.as_view(), name="deerflow-auth-providers"),
    path("oauth/<str:provider>", views.OAuthStartView.as_view(), name="deerflow-auth-oauth"),
    path("login/local", views.LoginLocalView.as_view(), name="deerflow-auth-login"),
    path("register", views.RegisterView.as_view(), name="deerflow-auth-register"),
    path("initialize", views.InitializeView.as_view(), name="deerflow-auth-initialize"),
    path("logout", views.LogoutView.as_view(), name="deerflow-auth-logout"),
    path("me", views.MeView.as_view(), name="deerflow-auth-me"),
    path("change-password", views.ChangePasswordView.as_view(), name="deerflow-auth-change-password"),
]
