from django.urls import path

from apps.chat.actions import views

urlpatterns = [
    # Before the runs app's ``runs/<run_id>`` routes, which would take these names as run ids.
    path("threads/<str:thread_id>/runs/regenerate", views.RegenerateView.as_view(), name="thread-regenerate"),
    path("threads/<str:thread_id>/runs/edit-regenerate", views.EditRerunView.as_view(), name="thread-edit-regenerate"),
    path("threads/<str:thread_id>/runs/regenerate/prepare", views.RegeneratePrepareView.as_view(), name="thread-regenerate-prepare"),
    path("threads/<str:thread_id>/runs/edit-regenerate/prepare", views.EditRegeneratePrepareView.as_view(),
         name="thread-edit-regenerate-prepare"),
    path("threads/<str:thread_id>/branches", views.BranchView.as_view(), name="thread-branches"),
    path("threads/<str:thread_id>/compact", views.CompactView.as_view(), name="thread-compact"),
    path("threads/<str:thread_id>/context", views.ContextUsageView.as_view(), name="thread-context"),
    path("threads/<str:thread_id>/suggestions", views.SuggestionsView.as_view(), name="thread-suggestions"),
    path("threads/<str:thread_id>/goal", views.GoalView.as_view(), name="thread-goal"),
    path("threads/<str:thread_id>/versions", views.VersionsView.as_view(), name="thread-versions"),
    path("suggestions/config", views.SuggestionsConfigView.as_view(), name="suggestions-config"),
]
