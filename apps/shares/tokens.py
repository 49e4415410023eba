"""The token in a shared link.

``HMAC-SHA256(SECRET_KEY, "deerflow.shares" + share id)``, base64url (43 characters):
unguessable without the server's key, recomputable for the owner (so Settings can show the
link again), and stored only as its SHA-256 digest, which is what a visit looks up; a database
dump alone opens no share. Changing ``DJANGO_SECRET_KEY`` therefore retires every shared link
(their digests no longer match).
"""

from __future__ import annotations

import base64
import hashlib

from django.utils.crypto import salted_hmac

_SALT = "deerflow.shares"


def share_token(share_id) -> str:
    mac = salted_hmac(_SALT, str(share_id), algorithm="sha256").digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


