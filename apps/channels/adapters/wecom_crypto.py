"""WeCom (WeChat Work) callback crypto, as its WXBizMsgCrypt scheme documents it.

- Signature: SHA-1 of the token, timestamp, nonce and ciphertext, sorted and concatenated.
- Cipher: AES-256-CBC; key = base64(EncodingAESKey + "="), IV = the key's first 16 bytes,
  PKCS#7 padding to 32-byte blocks (WeCom's block size, not AES's 16).
- Plaintext: 16 random bytes, the message length (4 bytes, big-endian), the message, then
  the receiver id (the CorpID), which must match ours.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

BLOCK = 32


class WeComCryptoError(Exception):
    """The signature, the ciphertext or the receiver id is wrong."""


def signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()


class WeComCrypto:
    def __init__(self, token: str, encoding_aes_key: str, receive_id: str) -> None:
        try:
            self.key = base64.b64decode(encoding_aes_key + "=", validate=True)
        except (binascii.Error, ValueError):
            raise WeComCryptoError("encoding_aes_key is not valid base64") from None
        if len(self.key) != 32:
            raise WeComCryptoError("encoding_aes_key must be the 43 characters WeCom shows")
        self.token, self.receive_id = token, receive_id

    def verify(self, msg_signature: str, timestamp: str, nonce: str, encrypted: str) -> None:
        expected = signature(self.token, timestamp, nonce, encrypted)
        if not hmac.compare_digest(expected, msg_signature or ""):
            raise WeComCryptoError("signature mismatch")

    def decrypt(self, encrypted: str) -> str:
        try:
            data = base64.b64decode(encrypted, validate=True)
        except (binascii.Error, ValueError):
            raise WeComCryptoError("ciphertext is not base64") from None
        if not data or len(data) % 16:
            raise WeComCryptoError("ciphertext length is not a whole number of blocks")
        decryptor = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).decryptor()
        plain = decryptor.update(data) + decryptor.finalize()
        pad = plain[-1]
        if not 1 <= pad <= BLOCK or plain[-pad:] != bytes([pad]) * pad:
            raise WeComCryptoError("bad padding (wrong key?)")
        plain = plain[:-pad]
        if len(plain) < 20:
            raise WeComCryptoError("plaintext too short")
        (length,) = struct.unpack(">I", plain[16:20])
        message, receive_id = plain[20:20 + length], plain[20 + length:]
        if len(message) != length:
            raise WeComCryptoError("length prefix does not fit the plaintext")
        if receive_id.decode("utf-8", "replace") != self.receive_id:
            raise WeComCryptoError("the message is addressed to another corp id")
        try:
            return message.decode("utf-8")
        except UnicodeDecodeError:
            raise WeComCryptoError("plaintext is not UTF-8") from None

    def encrypt(self, message: str, *, random_prefix: bytes | None = None) -> str:
        body = message.encode()
        plain = (random_prefix or os.urandom(16)) + struct.pack(">I", len(body)) + body + self.receive_id.encode()
        pad = BLOCK - len(plain) % BLOCK
        plain += bytes([pad]) * pad
        encryptor = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).encryptor()
        return base64.b64encode(encryptor.update(plain) + encryptor.finalize()).decode()

    def open(self, msg_signature: str, timestamp: str, nonce: str, encrypted: str) -> str:
        """Verify, then decrypt: the one call a callback needs."""
        self.verify(msg_signature, timestamp, nonce, encrypted)
        return self.decrypt(encrypted)
