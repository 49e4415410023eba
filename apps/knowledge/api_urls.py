from django.urls import path

from apps.knowledge import views

urlpatterns = [
    path("knowledge/collections", views.CollectionListView.as_view(), name="knowledge-collections"),
    path("knowledge/collections/<str:collection_id>", views.CollectionDetailView.as_view(), name="knowledge-collection"),
    path("knowledge/collections/<str:collection_id>/documents", views.DocumentListView.as_view(), name="knowledge-documents"),
    path("knowledge/documents/<str:document_id>", views.DocumentDetailView.as_view(), name="knowledge-document-api"),
    path("knowledge/documents/<str:document_id>/retry", views.DocumentRetryView.as_view(), name="knowledge-document-retry"),
    path("knowledge/documents/<str:document_id>/file", views.DocumentFileView.as_view(), name="knowledge-document-file"),
    path("knowledge/search", views.SearchView.as_view(), name="knowledge-search"),
    path("knowledge/citations/<str:citation_id>", views.CitationView.as_view(), name="knowledge-citation"),
    path("threads/<str:thread_id>/knowledge", views.ThreadCollectionsView.as_view(), name="thread-knowledge"),
]
