"""Database URLs as safe text: the one place a URL is rendered for messages and logs.

Both :mod:`.db` (status output, engine errors) and :mod:`._db_errors` (the typed storage
errors) name databases by URL, so the redaction lives below both of them.
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from langgraph_mnemon.config import redact_url as _redact_text

__all__ = ["redact_url"]


def redact_url(url: str | URL) -> str:
    """The URL as text with every credential masked (for messages, logs and status output):
    the userinfo password and secret-named query parameters (``password``, ``token``,
    ``api_key``, ...; see :func:`langgraph_mnemon.config.redact_url`). A URL with nothing to
    hide comes back exactly as given."""
    if isinstance(url, URL):
        return _redact_text(url.render_as_string(hide_password=False))
    text = str(url)
    shown = _redact_text(text)
    try:
        password = make_url(text).password
    except (ArgumentError, ValueError):
        return shown
    if password and str(password) in shown:
        # SQLAlchemy reads a password where the text did not show one (e.g. an unescaped "#").
        return _redact_text(make_url(text).render_as_string(hide_password=True))
    return shown
