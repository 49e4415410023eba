from django.urls import path

from apps.workspace import views

urlpatterns = [
    path("threads/<str:thread_id>/runs/<str:run_id>/workspace-changes", views.RunWorkspaceChangesView.as_view(),
         name="run-workspace-changes"),
]
