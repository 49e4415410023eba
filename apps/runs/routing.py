from django.urls import path

from apps.runs.consumers import ThreadConsumer

websocket_urlpatterns = [
    path("ws/threads/<str:thread_id>/", ThreadConsumer.as_asgi()),
]
