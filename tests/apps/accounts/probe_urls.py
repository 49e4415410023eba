"""Test URL conf: the project's routes plus throwaway views that declare token rules, so token
behaviour is tested on routes whose rules the test controls."""

from django.http import JsonResponse
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import accepts_tokens


class ProbeView(APIView):
    token_scopes = {"GET": "threads:read", "POST": "runs:create"}

    def get(self, request):
        return Response({"user": request.user.get_username(), "via": "token" if request.auth else "session"})

    def post(self, request):
        return Response({"user": request.user.get_username(), "created": True}, status=201)

    def delete(self, request):  # not in token_scopes: sessions only
        return Response(status=204)


class SessionOnlyProbeView(APIView):
    def get(self, request):
        return Response({"user": request.user.get_username()})


@accepts_tokens({"GET": "runs:read", "POST": "runs:create"})
def plain_token_view(request):
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "sign in"}, status=401)
    return JsonResponse({"user": request.user.get_username(), "method": request.method})


def plain_page(request):
    return JsonResponse({"user": request.user.get_username() if request.user.is_authenticated else None})


urlpatterns = [
    path("api/_probe/", ProbeView.as_view()),
    path("api/_session_only/", SessionOnlyProbeView.as_view()),
    path("_plain_token/", plain_token_view),
    path("_plain_page/", plain_page),
    path("", include("deerflow_site.urls")),
]
