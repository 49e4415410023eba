from django.urls import include, path

from apps.chat import artifact_views, export, feedback_views, input_polish, views

urlpatterns = [
    path("threads", views.ThreadCollectionView.as_view(), name="thread-collection"),
    path("threads/search", views.ThreadSearchView.as_view(), name="thread-search"),
    path("input-polish", input_polish.InputPolishView.as_view(), name="input-polish"),
    path("", include("apps.chat.actions.urls")),
    path("threads/<str:thread_id>", views.ThreadDetailView.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/pin", views.ThreadPinView.as_view(), name="thread-pin"),
    path("threads/<str:thread_id>/state", views.ThreadStateView.as_view(), name="thread-state"),
    path("threads/<str:thread_id>/state/checkpoint", views.ThreadStateCheckpointView.as_view(), name="thread-state-checkpoint"),
    path("threads/<str:thread_id>/state/<str:checkpoint_id>", views.ThreadStateAtCheckpointView.as_view(), name="thread-state-at"),
    path("threads/<str:thread_id>/history", views.ThreadHistoryView.as_view(), name="thread-history"),
    path("threads/<str:thread_id>/messages/page", views.ThreadMessagesPageView.as_view(), name="thread-messages-page"),
    path("threads/<str:thread_id>/export", export.ThreadExportView.as_view(), name="thread-export"),
    path("threads/<str:thread_id>/token-usage", views.ThreadTokenUsageView.as_view(), name="thread-token-usage"),
    path("threads/<str:thread_id>/artifacts/<path:artifact_path>", artifact_views.ThreadArtifactView.as_view(), name="thread-artifact"),
    # A run's ZIP sits under the run's URL but is served from here, beside the other artifact routes.
    path("threads/<str:thread_id>/runs/<str:run_id>/feedback", feedback_views.RunFeedbackView.as_view(), name="run-feedback"),
    path("threads/<str:thread_id>/runs/<str:run_id>/artifacts/archive", artifact_views.RunArtifactArchiveView.as_view(), name="run-artifact-archive"),
]
