from django.urls import path

from apps.runs import views

urlpatterns = [
    path("threads/<str:thread_id>/runs", views.ThreadRunsView.as_view(), name="thread-runs"),
    path("threads/<str:thread_id>/runs/stream", views.ThreadRunsStreamView.as_view(), name="thread-runs-stream"),
    path("threads/<str:thread_id>/runs/wait", views.ThreadRunsWaitView.as_view(), name="thread-runs-wait"),
    path("threads/<str:thread_id>/runs/<str:run_id>", views.RunDetailView.as_view(), name="run-detail"),
    path("threads/<str:thread_id>/runs/<str:run_id>/cancel", views.RunCancelView.as_view(), name="run-cancel"),
    path("threads/<str:thread_id>/runs/<str:run_id>/join", views.RunJoinView.as_view(), name="run-join"),
    path("threads/<str:thread_id>/runs/<str:run_id>/stream", views.RunJoinStreamView.as_view(), name="run-join-stream"),
    path("threads/<str:thread_id>/runs/<str:run_id>/events", views.RunEventsView.as_view(), name="run-events"),
    path("threads/<str:thread_id>/runs/<str:run_id>/messages", views.RunMessagesView.as_view(), name="run-messages"),
    path("runs", views.StatelessRunsView.as_view(), name="stateless-runs"),
    path("runs/stream", views.StatelessRunsStreamView.as_view(), name="stateless-runs-stream"),
    path("runs/wait", views.StatelessRunsWaitView.as_view(), name="stateless-runs-wait"),
]
