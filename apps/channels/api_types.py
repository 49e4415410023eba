"""Wire types of the channels API."""

from __future__ import annotations

from rest_framework import serializers


class CredentialField(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    type = serializers.ChoiceField(choices=["password", "text"])
    required = serializers.BooleanField()


class LoginQR(serializers.Serializer):
    image = serializers.CharField(help_text="the QR code as an SVG data URI")
    link = serializers.CharField(allow_blank=True, help_text="the web address it encodes, when it is one")


class Provider(serializers.Serializer):
    provider = serializers.CharField()
    display_name = serializers.CharField()
    enabled = serializers.BooleanField()
    configured = serializers.BooleanField()
    connectable = serializers.BooleanField()
    auth_mode = serializers.CharField()
    connection_status = serializers.CharField()
    credential_fields = CredentialField(many=True)
    detail = serializers.CharField(allow_blank=True)
    bot_name = serializers.CharField(allow_blank=True)
    last_event_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField(required=False, allow_blank=True, allow_null=True, help_text="staff only")
    last_error_at = serializers.DateTimeField(required=False, allow_null=True, help_text="staff only")
    login_qr = LoginQR(required=False, help_text="staff only: a login QR code the platform waits for an operator to scan")


class Providers(serializers.Serializer):
    enabled = serializers.BooleanField()
    providers = Provider(many=True)


class Connection(serializers.Serializer):
    id = serializers.IntegerField()
    provider = serializers.CharField()
    workspace = serializers.CharField(allow_blank=True)
    external_id = serializers.CharField()
    display_name = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)


class Connections(serializers.Serializer):
    connections = Connection(many=True)


class ConnectCode(serializers.Serializer):
    provider = serializers.CharField()
    mode = serializers.CharField()
    url = serializers.CharField(allow_null=True, allow_blank=True)
    code = serializers.CharField()
    instruction = serializers.CharField()
    expires_in = serializers.IntegerField()
    expires_at = serializers.DateTimeField()
