from django.urls import path

from apps.agents import views

urlpatterns = [
    path("assistants", views.AssistantCreateView.as_view(), name="assistant-create"),
    path("assistants/search", views.AssistantSearchView.as_view(), name="assistant-search"),
    path("assistants/count", views.AssistantCountView.as_view(), name="assistant-count"),
    path("assistants/<str:assistant_id>", views.AssistantDetailView.as_view(), name="assistant-detail"),
    path("assistants/<str:assistant_id>/graph", views.AssistantGraphView.as_view(), name="assistant-graph"),
    path("assistants/<str:assistant_id>/schemas", views.AssistantSchemasView.as_view(), name="assistant-schemas"),
    path("assistants/<str:assistant_id>/versions", views.AssistantVersionsView.as_view(), name="assistant-versions"),
    path("agents", views.AgentListView.as_view(), name="agent-list"),
    path("agents/check", views.AgentCheckView.as_view(), name="agent-check"),
    path("agents/<str:name>", views.AgentDetailView.as_view(), name="agent-detail"),
    path("agents/<str:name>/duplicate", views.AgentDuplicateView.as_view(), name="agent-duplicate"),
    path("agents/<str:name>/versions", views.AgentVersionsView.as_view(), name="agent-versions"),
    path("models", views.ModelListView.as_view(), name="model-list"),
    path("models/<str:name>", views.ModelDetailView.as_view(), name="model-detail"),
]
