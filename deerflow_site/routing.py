"""Websocket routes, gathered from the apps that serve them (under /ws/)."""

websocket_urlpatterns: list = []
