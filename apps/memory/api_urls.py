from django.urls import path

from apps.memory import views

urlpatterns = [
    path("memory", views.MemoryView.as_view(), name="memory"),
    path("memory/export", views.MemoryExportView.as_view(), name="memory-export"),
    path("memory/import", views.MemoryImportView.as_view(), name="memory-import"),
    path("memory/facts", views.FactListView.as_view(), name="memory-facts"),
    path("memory/facts/<str:fact_id>", views.FactDetailView.as_view(), name="memory-fact"),
    path("memory/config", views.MemoryConfigView.as_view(), name="memory-config"),
    path("memory/status", views.MemoryStatusView.as_view(), name="memory-status"),
]
