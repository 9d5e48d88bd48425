"""Sealing small secrets for storage: AES-256-GCM under a key derived from any string.

A :class:`SecretBox` holds the configured key (``secret_key``, env ``MNEMON_SECRET_KEY``) and,
during a rotation, the previous one (``secret_key_previous``). The 256-bit AES key is derived
from the string with scrypt (n=2^14, r=8, p=1; about 50 ms, once per process and key), so any
string works and a short one is still slow to guess; a long random string is best. Each value
is sealed with a fresh 96-bit nonce and bound to its *context* (the row it belongs to) as
associated data, so a sealed value copied into another row does not open. A sealed value
records the *key id* (an HMAC of the derived key, never the key) it was written with, so a
wrong key is named as such instead of failing as damaged data.

Without a key, :meth:`SecretBox.seal` stores plain text (scheme ``plain``): what protects it
then is the database's own access control only.

Example:
    >>> box = SecretBox("correct horse battery staple")
    >>> sealed = box.seal(b'{"api_key": "k"}', "space:ops")
    >>> sealed.scheme, box.open(sealed, "space:ops")
    ('aes-256-gcm', b'{"api_key": "k"}')
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from dataclasses import dataclass

from langgraph_mnemon.errors import InvalidInputError, SecretKeyError

__all__ = ["PLAIN", "SEALED", "Sealed", "SecretBox"]

PLAIN = "plain"
SEALED = "aes-256-gcm"
_SALT = b"langgraph-mnemon/secret-box/v1"
_KEY_ID_LABEL = b"langgraph-mnemon key id"
_NONCE = 12
_FIX_KEY = (
    "set MNEMON_SECRET_KEY (secret_key) to the key they were written with; after a change of "
    "key put the old one in MNEMON_SECRET_KEY_PREVIOUS and run `mnemon secrets rotate`"
)


@dataclass(frozen=True, slots=True)
class Sealed:
    """A value as stored: ``scheme`` (``plain`` or ``aes-256-gcm``), the id of the key it was
    sealed with (``None`` for plain text) and the payload (text)."""

    scheme: str
    key_id: str | None
    payload: str


@functools.lru_cache(maxsize=8)
def _derive(key: str) -> tuple[bytes, str]:
    """``(256-bit key, key id)`` for the configured string (scrypt; cached per process)."""
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    derived = Scrypt(salt=_SALT, length=32, n=2**14, r=8, p=1).derive(key.encode("utf-8"))
    key_id = hmac.new(derived, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]
    return derived, key_id


class SecretBox:
    """Seals with the current key, opens with the current or the previous one.

    Args:
        key: The current key string (``None``: values are stored as plain text).
        previous: The key before a rotation (read only).

    Raises:
        InvalidInputError: a key that is empty or not a string.
    """

    def __init__(self, key: str | None = None, previous: str | None = None) -> None:
        self._keys: dict[str, bytes] = {}
        self._current: str | None = None
        for which, value in (("previous", previous), ("current", key)):
            if value is None:
                continue
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(
                    f"the {which} secret key must be a non-empty string (MNEMON_SECRET_KEY"
                    f"{'_PREVIOUS' if which == 'previous' else ''})"
                )
            derived, key_id = _derive(value)
            self._keys[key_id] = derived
            if which == "current":
                self._current = key_id

    def __repr__(self) -> str:
        return f"SecretBox(encrypts={self.encrypts}, keys={len(self._keys)})"

    @property
    def encrypts(self) -> bool:
        """Whether new values are encrypted (a current key is configured)."""
        return self._current is not None

    @property
    def key_id(self) -> str | None:
        """The id of the current key (``None`` without one)."""
        return self._current

    def is_current(self, sealed: Sealed) -> bool:
        """Whether ``sealed`` is stored the way :meth:`seal` stores now (no rotation needed)."""
        if self._current is None:
            return sealed.scheme == PLAIN
        return sealed.scheme == SEALED and sealed.key_id == self._current

    def seal(self, data: bytes, context: str) -> Sealed:
        """``data`` as stored: encrypted with the current key, bound to ``context``; plain
        text (UTF-8) when no key is configured."""
        if self._current is None:
            return Sealed(PLAIN, None, data.decode("utf-8"))
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(_NONCE)
        box = AESGCM(self._keys[self._current]).encrypt(nonce, data, context.encode("utf-8"))
        return Sealed(SEALED, self._current, base64.urlsafe_b64encode(nonce + box).decode())

    def open(self, sealed: Sealed, context: str, *, what: str = "stored secrets") -> bytes:
        """The plain bytes of ``sealed`` (written for ``context``).

        Raises:
            SecretKeyError: code ``secret-key``: encrypted but no key is configured, written
                with a key that is neither the current nor the previous one, or it does not
                open (damaged, or moved from another row). The message names the fix, never
                the value.
        """
        if sealed.scheme == PLAIN:
            return sealed.payload.encode("utf-8")
        if sealed.scheme != SEALED:
            raise SecretKeyError(
                f"{what} use the unknown scheme {sealed.scheme!r}; upgrade langgraph-mnemon"
            )
        if not self._keys:
            raise SecretKeyError(
                f"{what} are encrypted and no secret key is configured; {_FIX_KEY}"
            )
        key = self._keys.get(sealed.key_id or "")
        if key is None:
            raise SecretKeyError(
                f"{what} were encrypted with another key than the configured one; {_FIX_KEY}"
            )
        return _decrypt(key, sealed.payload, context, what)


def _decrypt(key: bytes, payload: str, context: str, what: str) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        raw = base64.urlsafe_b64decode(payload.encode("ascii"))
        return AESGCM(key).decrypt(raw[:_NONCE], raw[_NONCE:], context.encode("utf-8"))
    except (InvalidTag, ValueError):
        raise SecretKeyError(
            f"{what} do not decrypt with their key (damaged, or copied from another row); "
            "configure them again (e.g. `mnemon spaces configure SPACE_ID --secret-env ...`)"
        ) from None
