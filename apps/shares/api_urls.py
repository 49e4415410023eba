from django.urls import path

from apps.shares import views

urlpatterns = [
    path("threads/<str:thread_id>/shares", views.ThreadSharesView.as_view(), name="thread-shares"),
    path("shares", views.ShareCollectionView.as_view(), name="share-collection"),
    path("shares/<str:share_id>", views.ShareDetailView.as_view(), name="share-detail"),
]
