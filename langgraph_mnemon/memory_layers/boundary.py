"""The boundary of a fenced block: a digest of the block's content that its stored text lacks.

The blocks the model reads as structure (the Runtime Memory snapshot's file blocks, the Mnemos
resume block) show stored text literally, never escaped, so their structure lines carry a
*boundary* stored text cannot write: 12 hex digits of a SHA-256 over everything the block
shows, re-derived with a salt in the rare case the digest occurs in the stored text. It is
deterministic: identical content renders identically (the Wake digest stays stable).

Example:
    >>> b = content_boundary(["USER.md", ["Prefers tea."]], ["Prefers tea."])
    >>> len(b), b == content_boundary(["USER.md", ["Prefers tea."]], ["Prefers tea."])
    (12, True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from itertools import count

__all__ = ["BOUNDARY_CHARS", "content_boundary"]

BOUNDARY_CHARS = 12


def content_boundary(content: Sequence[object], texts: Sequence[str]) -> str:
    """A boundary for a block showing ``content`` that occurs in none of ``texts``.

    Args:
        content: what the block shows, as JSON-serialisable values (the digest's input,
            after the salt).
        texts: the stored texts the block shows literally; the boundary occurs in none.

    Returns:
        :data:`BOUNDARY_CHARS` lowercase hex digits.

    Example:
        >>> content_boundary(["x"], ["x"]) != content_boundary(["y"], ["y"])
        True
    """
    for salt in count():
        payload = json.dumps([salt, *content], ensure_ascii=True)  # lone surrogates escaped
        boundary = hashlib.sha256(payload.encode()).hexdigest()[:BOUNDARY_CHARS]
        if not any(boundary in text for text in texts):
            return boundary
    raise AssertionError("unreachable")  # pragma: no cover
