"""URLs as shown in messages, logs and status: every credential masked as ``***``.

``langgraph_mnemon.config`` re-exports :func:`redact_url` (its public home); the settings'
own messages use it, so it sits below them.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

__all__ = ["redact_url"]

_MASK = "***"
_SECRET_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "pass", "token", "key", "apikey", "secret", "auth",
        "sig", "signature", "credential", "credentials", "authorization",
    }
)  # fmt: skip
# Compound names written without separators: sslpassword, accessToken, clientSecret, xApiKey.
_SECRET_SUFFIXES = ("password", "passwd", "token", "secret", "apikey", "signature", "credential")
_WORD = re.compile(r"[a-z0-9]+")


def _secret_name(name: str) -> bool:
    words = _WORD.findall(unquote_plus(name).lower())
    compact = "".join(words)
    return any(w in _SECRET_WORDS for w in words) or compact.endswith(_SECRET_SUFFIXES)


def _mask_pairs(text: str) -> str:
    pairs = []
    for pair in text.split("&"):
        name, sep, value = pair.partition("=")
        pairs.append(f"{name}={_MASK}" if sep and value and _secret_name(name) else pair)
    return "&".join(pairs)


def redact_url(url: str) -> str:
    """``url`` with every credential masked as ``***``: the userinfo password and the values
    of query (and fragment) parameters named like a secret (password, passwd, pwd, token, key,
    api_key, apikey, secret, access_token, auth, sig, x-api-key, client_secret, ...).

    A URL with nothing to hide (or text that is not a URL) comes back byte-identical.

    Example:
        >>> redact_url("postgresql://app:hunter2@db/mnemon?sslmode=require&password=x")
        'postgresql://app:***@db/mnemon?sslmode=require&password=***'
    """
    start = url.find("://")
    if start <= 0:
        return url
    head, rest = url[: start + 3], url[start + 3 :]
    # The userinfo ends at the last "@" before any query or fragment, as SQLAlchemy reads it
    # (an unescaped "/" in a password must not leave half of it shown).
    end = next((i for i, ch in enumerate(rest) if ch in "?#"), len(rest))
    userinfo, at, _ = rest[:end].rpartition("@")
    user, colon, password = userinfo.partition(":")
    if at and colon and password and "/" not in user:
        rest = f"{user}:{_MASK}{rest[len(userinfo) :]}"
    before, hash_, fragment = rest.partition("#")
    location, question, query = before.partition("?")
    if question:
        query = _mask_pairs(query)
    if hash_ and "=" in fragment:
        fragment = _mask_pairs(fragment)
    return f"{head}{location}{question}{query}{hash_}{fragment}"
