from django.urls import path

from apps.agents import views

urlpatterns = [
    path("assistants/search", views.AssistantSearchView.as_view(), name="assistant-search"),
    path("assistants/<str:assistant_id>", views.AssistantDetailView.as_view(), name="assistant-detail"),
    path("assistants/<str:assistant_id>/graph", views.AssistantGraphView.as_view(), name="assistant-graph"),
    path("assistants/<str:assistant_id>/schemas", views.AssistantSchemasView.as_view(), name="assistant-schemas"),
    path("models", views.ModelListView.as_view(), name="model-list"),
]
