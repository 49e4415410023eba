from django.urls import path

from apps.threads import pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("c/<str:thread_id>/", pages.thread_page, name="chat-thread"),
]
