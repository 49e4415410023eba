from django.urls import path

from apps.threads import views

urlpatterns = [
    path("threads", views.ThreadCollectionView.as_view(), name="thread-collection"),
    path("threads/search", views.ThreadSearchView.as_view(), name="thread-search"),
    path("threads/<str:thread_id>", views.ThreadDetailView.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/state", views.ThreadStateView.as_view(), name="thread-state"),
    path("threads/<str:thread_id>/state/checkpoint", views.ThreadStateCheckpointView.as_view(), name="thread-state-checkpoint"),
    path("threads/<str:thread_id>/state/<str:checkpoint_id>", views.ThreadStateAtCheckpointView.as_view(), name="thread-state-at"),
    path("threads/<str:thread_id>/history", views.ThreadHistoryView.as_view(), name="thread-history"),
    path("threads/<str:thread_id>/messages/page", views.ThreadMessagesPageView.as_view(), name="thread-messages-page"),
    path("threads/<str:thread_id>/token-usage", views.ThreadTokenUsageView.as_view(), name="thread-token-usage"),
]
