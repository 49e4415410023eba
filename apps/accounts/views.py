"""Account API (tokens, me) and the token management page.

Token management is for a signed-in browser only: these views declare no ``token_scopes``, so a
token caller gets 403 and cannot mint or revoke tokens with a token.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts import selectors, services
from apps.accounts.models import PersonalAccessToken
from apps.accounts.permissions import ANY_SCOPE
from apps.errors import DomainError, InvalidRequest


class TokenOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = PersonalAccessToken
        fields = ["id", "name", "prefix", "scopes", "created_at", "last_used_at", "expires_at"]


class TokenListOutputSerializer(serializers.Serializer):
    tokens = TokenOutputSerializer(many=True)


class TokenCreateInputSerializer(serializers.Serializer):
    # Shapes only; the rules (length, known scopes, expiry range) live in services.token_create.
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)
    scopes = serializers.ListField(child=serializers.CharField())
    expires_in_days = serializers.IntegerField(required=False, allow_null=True)


class IssuedTokenOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    token = serializers.CharField(help_text="The token itself. Shown this once; only its digest is stored.")
    prefix = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField(allow_null=True)


class TokenListCreateView(APIView):
    @extend_schema(responses=TokenListOutputSerializer, summary="List your personal access tokens")
    def get(self, request):
        tokens = selectors.token_list_for_user(user=request.user)
        return Response({"tokens": TokenOutputSerializer(tokens, many=True).data})

    @extend_schema(request=TokenCreateInputSerializer, responses={201: IssuedTokenOutputSerializer}, summary="Create a personal access token")
    def post(self, request):
        data = TokenCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        issued = services.token_create(owner=request.user, **data.validated_data)
        record = issued.record
        body = {"id": record.pk, "name": record.name, "token": issued.token, "prefix": record.prefix, "scopes": record.scopes, "expires_at": record.expires_at}
        return Response(IssuedTokenOutputSerializer(body).data, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    @extend_schema(responses={204: None}, summary="Revoke a personal access token")
    def delete(self, request, token_id: int):
        token = selectors.token_get_for_user(user=request.user, token_id=token_id)
        services.token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField(allow_blank=True, help_text="empty when the account has none")
    is_staff = serializers.BooleanField()


class MeView(APIView):
    # Any valid token may ask whose it is: scripts use this to check a token before real work.
    token_scopes = {"GET": ANY_SCOPE}

    @extend_schema(responses=MeOutputSerializer, summary="The signed-in user (or the token's owner)")
    def get(self, request):
        user = request.user
        return Response(MeOutputSerializer({"id": user.pk, "username": user.get_username(), "email": user.email, "is_staff": user.is_staff}).data)


SCOPE_HELP = {
    "threads:read": "list and read your threads, their state and files",
    "threads:write": "create, rename and delete threads; upload files",
    "runs:read": "list runs and follow their streams",
    "runs:create": "start runs (send messages to the agent)",
    "runs:cancel": "stop runs in progress",
    "admin": "staff operations by script: set budgets, the console's overview, cancel anyone's run, "
             "read everyone's usage and decisions (MCP settings, global skills and Django admin stay browser-only)",
}
# What a langgraph-sdk script needs to start a chat and read the answer. Never `admin`: staff
# powers are chosen deliberately, token by token.
DEFAULT_TOKEN_SCOPES = ["threads:read", "threads:write", "runs:read", "runs:create"]


@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request):
    """List, create (the token is shown once, on the response page) and revoke tokens."""
    issued = None
    form_errors = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create":
                days = request.POST.get("expires_in_days", "").strip()
                if days and not days.isdigit():
                    raise InvalidRequest("expires_in_days: a whole number of days, or empty for never")
                issued = services.token_create(
                    owner=request.user,
                    name=request.POST.get("name", ""),
                    scopes=request.POST.getlist("scopes"),
                    expires_in_days=int(days) if days else None,
                )
            elif action == "revoke":
                token_id = request.POST.get("token_id", "")
                token = selectors.token_get_for_user(user=request.user, token_id=int(token_id) if token_id.isdigit() else 0)
                services.token_revoke(token=token)
                messages.success(request, f"Revoked “{token.name}”.")
                return redirect("account_tokens")
        except DomainError as error:
            form_errors = error.detail
    context = {
        "tokens": selectors.token_list_for_user(user=request.user),
        "scopes": selectors.token_scopes_offered(user=request.user),
        "issued": issued,
        "form_errors": form_errors,
        "form": request.POST if form_errors else None,
        "scope_help": SCOPE_HELP,
        # An empty selection was the first attempt's usual failure.
        "selected_scopes": request.POST.getlist("scopes") if form_errors else DEFAULT_TOKEN_SCOPES,
    }
    # The plaintext must not be cached anywhere on the way back.
    response = render(request, "account/tokens.html", context, status=422 if form_errors else 200)
    response["Cache-Control"] = "no-store"
    return response
