from django.urls import path

from apps.knowledge import pages

urlpatterns = [
    path("", pages.knowledge_page, name="knowledge"),
    path("documents/<str:document_id>/", pages.document_page, name="knowledge-document"),
    path("cite/<str:citation_id>", pages.citation_page, name="knowledge-cite"),
]
