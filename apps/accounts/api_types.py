"""Wire types of DeerFlow's sign-in routes (``/api/v1/auth/*``), as its frontend expects them.
Their errors are DeerFlow's, not this API's ``{detail: text}``: ``{detail: {code, message}}``
for a refused sign-in and FastAPI's ``{detail: [{loc, msg, type}]}`` for a missing field."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers


class SetupStatus(serializers.Serializer):
    needs_setup = serializers.BooleanField()
    registration_enabled = serializers.BooleanField()


class SsoProvider(serializers.Serializer):
    id = serializers.CharField()
    display_name = serializers.CharField()
    type = serializers.CharField()


class SsoProviders(serializers.Serializer):
    providers = SsoProvider(many=True)


class LoginForm(serializers.Serializer):
    username = serializers.CharField(help_text="the e-mail address")
    password = serializers.CharField()
    remember_me = serializers.BooleanField(required=False)


class SignedIn(serializers.Serializer):
    expires_in = serializers.IntegerField(help_text="seconds the session lasts")
    needs_setup = serializers.BooleanField()


class SignUp(serializers.Serializer):
    email = serializers.CharField()
    password = serializers.CharField()
    remember_me = serializers.BooleanField(required=False)


class DeerFlowUser(serializers.Serializer):
    id = serializers.CharField()
    email = serializers.CharField()
    system_role = serializers.ChoiceField(choices=["admin", "user"])
    needs_setup = serializers.BooleanField()
    oauth_provider = serializers.CharField(allow_null=True)


class PasswordChange(serializers.Serializer):
    current_password = serializers.CharField()
    new_password = serializers.CharField()
    new_email = serializers.CharField(required=False, allow_blank=True)


class Message(serializers.Serializer):
    message = serializers.CharField()


class AuthErrorDetail(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class FieldError(serializers.Serializer):
    loc = serializers.ListField(child=serializers.CharField())
    msg = serializers.CharField()
    type = serializers.CharField()


class AuthRefused(serializers.Serializer):
    detail = AuthErrorDetail()


class AuthInvalid(serializers.Serializer):
    detail = FieldError(many=True)


class PlainError(serializers.Serializer):
    detail = serializers.CharField()


AUTH_ERROR = PolymorphicProxySerializer(component_name="DeerFlowAuthError", serializers=[AuthRefused, AuthInvalid, PlainError],
                                        resource_type_field_name=None)
AUTH_ERRORS = {code: AUTH_ERROR for code in (400, 401, 403, 404, 409, 422, 429)}
