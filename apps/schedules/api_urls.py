from django.urls import path

from apps.schedules import views

urlpatterns = [
    path("scheduled-tasks", views.ScheduledTaskCollectionView.as_view(), name="scheduled-tasks"),
    path("scheduled-tasks/preview", views.SchedulePreviewView.as_view(), name="scheduled-task-preview"),
    path("scheduled-tasks/<str:task_id>", views.ScheduledTaskDetailView.as_view(), name="scheduled-task-detail"),
    path("scheduled-tasks/<str:task_id>/pause", views.ScheduledTaskPauseView.as_view(), name="scheduled-task-pause"),
    path("scheduled-tasks/<str:task_id>/resume", views.ScheduledTaskResumeView.as_view(), name="scheduled-task-resume"),
    path("scheduled-tasks/<str:task_id>/trigger", views.ScheduledTaskTriggerView.as_view(), name="scheduled-task-trigger"),
    path("scheduled-tasks/<str:task_id>/runs", views.ScheduledTaskRunsView.as_view(), name="scheduled-task-runs"),
    path("threads/<str:thread_id>/scheduled-tasks", views.ThreadScheduledTasksView.as_view(), name="thread-scheduled-tasks"),
]
