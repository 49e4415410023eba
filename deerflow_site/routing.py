"""Websocket routes, gathered from the apps that serve them (under /ws/)."""

from apps.runs.routing import websocket_urlpatterns as runs_ws

websocket_urlpatterns: list = [*runs_ws]
