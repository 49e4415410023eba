from django.urls import path

from apps.chat import pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("c/<str:thread_id>/", pages.thread_page, name="chat-thread"),
    path("bundles/<str:filename>", pages.BundleView.as_view(), name="chat-bundle"),
]
