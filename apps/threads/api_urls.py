from django.urls import path

from apps.threads import tag_views, upload_views

urlpatterns = [
    path("tags", tag_views.TagCollectionView.as_view(), name="tag-collection"),
    path("tags/<int:tag_id>", tag_views.TagDetailView.as_view(), name="tag-detail"),
    path("threads/<str:thread_id>/tags", tag_views.ThreadTagsView.as_view(), name="thread-tags"),
    path("threads/<str:thread_id>/uploads", upload_views.ThreadUploadsView.as_view(), name="thread-uploads"),
    path("threads/<str:thread_id>/uploads/limits", upload_views.ThreadUploadLimitsView.as_view(), name="thread-upload-limits"),
    path("threads/<str:thread_id>/uploads/list", upload_views.ThreadUploadListView.as_view(), name="thread-upload-list"),
    path("threads/<str:thread_id>/uploads/<str:filename>", upload_views.ThreadUploadDetailView.as_view(), name="thread-upload-detail"),
]
