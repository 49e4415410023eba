"""Account API routes under /api/ (API_CONTRACT.md §8)."""

from django.urls import path

from apps.accounts import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="api-me"),
    path("tokens/", views.TokenListCreateView.as_view(), name="api-tokens"),
    path("tokens/<int:token_id>/", views.TokenDetailView.as_view(), name="api-token-detail"),
]
