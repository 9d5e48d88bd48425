"""Document text: rendering and parsing a document file, slugs, excerpts, evidence windows.

Pure functions (no I/O). A document file is a YAML frontmatter of JSON-quoted scalars, a blank
line, the trimmed body and a trailing newline; :func:`render_document` writes it and
:func:`parse_document` / :func:`file_body` read it back. Every cut (excerpts, windows, the model
bounds) keeps a character together with its combining marks.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.documents._models import (
    DOCUMENT_ID_PATTERN,
    DocumentHit,
    DocumentRecord,
    DocumentSearchResult,
)
from langgraph_mnemon.memory_layers.documents._validation import checked_int
from langgraph_mnemon.memory_layers.text import normalize_text, tokenize

__all__ = [
    "EARLIER_MARKER",
    "EVIDENCE_LEAD_CHARS",
    "EVIDENCE_WINDOW_CHARS",
    "LATER_MARKER",
    "LIST_EXCERPT_CHARS",
    "MODEL_MAX_CHARACTERS",
    "MODEL_MAX_RECORDS",
    "bound_for_model",
    "clip",
    "cut_excerpt",
    "evidence_window",
    "excerpt",
    "file_body",
    "header_id",
    "parse_document",
    "render_document",
    "sha256",
    "sized",
    "slugify",
]

EVIDENCE_WINDOW_CHARS = 2600
EVIDENCE_LEAD_CHARS = 400
LIST_EXCERPT_CHARS = 220
MODEL_MAX_RECORDS = 4
MODEL_MAX_CHARACTERS = 6000
EARLIER_MARKER = "[earlier content omitted]\n"
LATER_MARKER = "\n[later content omitted]"
_SLUG_CHARS = 48
_FRONTMATTER_SCALARS = (
    "id",
    "title",
    "description",
    "status",
    "created_at",
    "updated_at",
    "content_hash",
)
# (frontmatter key, record attribute): the file keeps the seed's wire name.
_FRONTMATTER_LISTS = (
    ("source_paths", "source_paths"),
    ("session_ids", "session_ids"),
    ("memory_body_ids", "space_ids"),
)
_HEADER_PREFIX = b'---\nid: "'
_SPACES = re.compile(r"\s+")
_EXCERPT_STRIP = re.compile(r"[#>*_`\[\]]")
# Beyond this length the character-by-character NFKC mapping of _locate is not attempted.
_LOCATE_NFKC_CHARS = 200_000


# --- the document file ------------------------------------------------------------------------


def slugify(title: str) -> str:
    """File-name slug: NFKD, lowercase, non-``[a-z0-9]`` runs → ``-``, ≤48 chars or ``document``.

    Args:
        title: the Document title.

    Returns:
        The slug the file name starts with.

    Example:
        >>> slugify("Hello, World!  Ünïcödé")
        'hello-world-unicode'
    """
    # NFKD splits accented letters into base + combining mark; the marks are dropped.
    text = "".join(
        c for c in unicodedata.normalize("NFKD", title).lower() if not unicodedata.combining(c)
    )
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:_SLUG_CHARS].strip("-")
    return slug or "document"


def _quote(value: str) -> str:
    """A JSON string that is also a safe YAML double-quoted scalar."""
    out = json.dumps(value, ensure_ascii=False)
    if any(ord(c) >= 0x7F and (ord(c) <= 0x9F or c in "\u2028\u2029\ufeff") for c in out):
        out = "".join(
            f"\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\ufeff" else c
            for c in out
        )
    return out


def render_document(record: DocumentRecord, body: str) -> str:
    """The Markdown file of ``record``: JSON-quoted YAML frontmatter, blank line, body, newline.

    Args:
        record: the index record (its frontmatter fields are written).
        body: the trimmed body.

    Returns:
        The whole file text; its UTF-8 size is the record's ``size_bytes``.

    Example:
        >>> text = render_document(record, "We chose SQLite.")
        >>> text.startswith('---\\nid: "') and text.endswith("\\n\\nWe chose SQLite.\\n")
        True
    """
    lines = ["---"]
    for key in _FRONTMATTER_SCALARS:
        lines.append(f"{key}: {_quote(getattr(record, key))}")
    for key, attribute in _FRONTMATTER_LISTS:
        values = getattr(record, attribute)
        if values:
            lines.append(f"{key}:")
            lines.extend(f"  - {_quote(v)}" for v in values)
        else:
            lines.append(f"{key}: []")
    lines.append("---")
    return "\n".join(lines) + "\n\n" + body + "\n"


def parse_document(text: str) -> tuple[dict[str, Any], str]:
    """Split a rendered file into its frontmatter values and body. Raises ``ValueError``."""
    if not text.startswith("---\n"):
        raise ValueError("missing frontmatter")
    end = text.find("\n---\n\n", 3)
    if end < 0 or not text.endswith("\n"):
        raise ValueError("unterminated frontmatter")
    header: dict[str, Any] = {}
    current: list[str] | None = None
    for line in text[4:end].split("\n"):
        if line.startswith("  - ") and current is not None:
            current.append(json.loads(line[4:]))
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"bad frontmatter line {line!r}")
        value = value.strip()
        if value == "":
            current = header[key] = []
        else:
            header[key] = json.loads(value)
            current = None
    return header, text[end + 6 : -1]


def file_body(text: str) -> str | None:
    """The body of a rendered file without parsing the frontmatter (``None`` if not one).

    The caller vouches for the body with its SHA-256.
    """
    end = text.find("\n---\n\n", 3)
    if not text.startswith("---\n") or end < 0 or not text.endswith("\n"):
        return None
    return text[end + 6 : -1]


def header_id(head: bytes) -> str | None:
    """The document id at the start of a file (its first bytes), or ``None`` if not ours."""
    if not head.startswith(_HEADER_PREFIX):
        return None
    start = len(_HEADER_PREFIX)
    value = head[start : start + 36].decode("ascii", "replace")
    return (
        value
        if DOCUMENT_ID_PATTERN.match(value) and head[start + 36 : start + 38] == b'"\n'
        else None
    )


def sha256(text: str) -> str:
    """SHA-256 of the UTF-8 text, hexadecimal (a record's ``content_hash``)."""
    return hashlib.sha256(text.encode()).hexdigest()


def sized(record: DocumentRecord, body: str) -> DocumentRecord:
    """``record`` with ``size_bytes`` set to the UTF-8 size of its rendered file."""
    size = len(render_document(record, body).encode())
    return record if record.size_bytes == size else record.model_copy(update={"size_bytes": size})


# --- cuts -------------------------------------------------------------------------------------


def _joins_previous(char: str) -> bool:
    """True for code points that belong to the character before them (marks, joiners)."""
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0100 <= code <= 0xE01EF
    )


def _safe_end(text: str, end: int) -> int:
    """Move a cut position left so it does not split a base character from its marks."""
    end = max(0, min(end, len(text)))
    while 0 < end < len(text) and (_joins_previous(text[end]) or (text[end - 1] == "\u200d")):
        end -= 1
    return end


def _safe_start(text: str, start: int) -> int:
    """Move a start position right past marks that belong to a character before it."""
    start = max(0, min(start, len(text)))
    while 0 < start < len(text) and (_joins_previous(text[start]) or text[start - 1] == "\u200d"):
        start += 1
    return start


def clip(text: str, limit: int, marker: str = "…") -> str:
    """``text`` cut to at most ``limit`` characters, ``marker`` included when cut."""
    if len(text) <= limit:
        return text
    if limit <= len(marker):
        return text[: _safe_end(text, limit)]
    return text[: _safe_end(text, limit - len(marker))] + marker


def excerpt(text: str, max_chars: int = LIST_EXCERPT_CHARS) -> str:
    """A one-line preview: Markdown marks removed, whitespace collapsed, cut with ``…``.

    Args:
        text: a Document body.
        max_chars: the longest preview, ``…`` included.

    Returns:
        The preview.

    Example:
        >>> excerpt("# Title\\n\\nSome *bold* text", 40)
        'Title Some bold text'
    """
    return cut_excerpt(text, max_chars)[0]


def cut_excerpt(text: str, max_chars: int) -> tuple[str, bool]:
    """:func:`excerpt` and whether it was cut."""
    flat = _SPACES.sub(" ", _EXCERPT_STRIP.sub("", text)).strip()
    if len(flat) <= max_chars:
        return flat, False
    cut = _safe_end(flat, max_chars - 1)
    return flat[:cut].rstrip() + "…", True


# --- evidence windows -------------------------------------------------------------------------


def _locate(content: str, term: str) -> int:
    """Earliest index in ``content`` where normalised ``term`` occurs, or -1."""
    lowered = content.lower()
    if len(lowered) == len(content):
        found = lowered.find(term)
        if found >= 0:
            return found
    pattern = r"\s+".join(re.escape(part) for part in term.split(" "))
    match = re.search(pattern, content, re.IGNORECASE)
    if match:
        return match.start()
    if len(content) > _LOCATE_NFKC_CHARS:
        return -1
    return _locate_normalised(content, term)


def _locate_normalised(content: str, term: str) -> int:
    """Compatibility forms (full-width letters, ligatures): map normalised offsets back."""
    pieces: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(content):
        piece = unicodedata.normalize("NFKC", char).lower()
        if piece.isspace():
            piece = " "
        pieces.append(piece)
        origin.extend([i] * len(piece))
    flat = "".join(pieces)
    found = flat.find(term)
    if found < 0:
        found = _SPACES.sub(" ", flat).find(term)
        return -1 if found < 0 else _collapsed_origin(flat, found, origin)
    return origin[found]


def _collapsed_origin(flat: str, found: int, origin: list[int]) -> int:
    seen = 0
    prev_space = False
    for i, char in enumerate(flat):
        space = char == " "
        if space and prev_space:
            continue
        if seen == found:
            return origin[i]
        seen += 1
        prev_space = space
    return -1


def _anchor(content: str, query: str) -> int:
    """Where the longest matching term (the whole query or a token) first occurs, or -1."""
    norm = normalize_text(content)
    terms = [t for t in dict.fromkeys([normalize_text(query), *tokenize(query)]) if t in norm]
    for term in sorted(terms, key=len, reverse=True):  # stable: ties keep query order
        anchor = _locate(content, term)
        if anchor >= 0:
            return anchor
    return -1


def evidence_window(
    content: str,
    query: str,
    *,
    max_chars: int = EVIDENCE_WINDOW_CHARS,
    lead_chars: int = EVIDENCE_LEAD_CHARS,
) -> str:
    """A query-local window of ``content`` of at most ``max_chars`` characters.

    It starts ``lead_chars`` before the earliest occurrence of the longest matching term (the
    whole query or one of its tokens) and carries ``[earlier content omitted]`` /
    ``[later content omitted]`` markers where text was left out. Cuts never separate a character
    from its combining marks. Content that fits is returned whole.

    Args:
        content: the Document body.
        query: the search query.
        max_chars: the longest window, markers included (at least 100).
        lead_chars: how much text to keep before the match.

    Returns:
        The window.

    Raises:
        InvalidInputError: ``content`` or ``query`` is not a string, ``max_chars`` below 100.

    Example:
        >>> window = evidence_window("intro " * 1000 + "the rollback step", "rollback")
        >>> window.startswith(EARLIER_MARKER) and "rollback" in window
        True
    """
    if not isinstance(content, str) or not isinstance(query, str):
        raise InvalidInputError("content and query must be strings")
    checked_int(max_chars, "max_chars must be an integer of at least 100", low=100)
    if len(content) <= max_chars:
        return content
    anchor = _anchor(content, query)
    start = 0 if anchor < 0 else max(0, anchor - max(0, lead_chars))
    if start == 0:
        end = _safe_end(content, max_chars - len(LATER_MARKER))
        return content[:end] + LATER_MARKER
    room = max_chars - len(EARLIER_MARKER)
    if start + room >= len(content):
        # The tail fits: pull the start back so the window is used fully.
        start = _safe_start(content, len(content) - room)
        return EARLIER_MARKER + content[start:]
    room -= len(LATER_MARKER)
    start = _safe_start(content, start)
    end = _safe_end(content, start + room)
    return EARLIER_MARKER + content[start:end] + LATER_MARKER


# --- model bounds -----------------------------------------------------------------------------


def _shrink(
    hits: Sequence[DocumentHit], max_records: int, budget: int
) -> tuple[tuple[DocumentHit, ...], int]:
    """At most ``max_records`` hits whose content fits ``budget`` characters; the budget left."""
    kept = []
    for hit in hits[:max_records]:
        if budget <= 0:
            break
        content = clip(hit.content, budget, LATER_MARKER)
        budget -= len(content)
        kept.append(
            hit.model_copy(
                update={
                    "title": clip(hit.title, 200),
                    "description": clip(hit.description, 500),
                    "relative_path": clip(hit.relative_path, 500),
                    "source_paths": tuple(clip(p, 500) for p in hit.source_paths[:8]),
                    "content": content,
                    "truncated": hit.truncated or content != hit.content,
                }
            )
        )
    return tuple(kept), budget


def bound_for_model(
    result: DocumentSearchResult,
    *,
    max_records: int = MODEL_MAX_RECORDS,
    max_characters: int = MODEL_MAX_CHARACTERS,
) -> DocumentSearchResult:
    """Shrink a search result to the model-path bounds: ≤4 records and ≤6,000 content chars.

    Titles are cut to 200 characters, descriptions and paths to 500, source paths to 8 items.
    Records after the character budget is spent are dropped; suggestions get what the results
    left of the budget.

    Args:
        result: what :meth:`Documents.search` returned.
        max_records: most results (and most suggestions) kept.
        max_characters: content characters across results and suggestions.

    Returns:
        A copy of ``result`` within the bounds.

    Raises:
        InvalidInputError: ``result`` is not a search result, a bound is not a positive integer.

    Example:
        >>> small = bound_for_model(docs.search("release"), max_records=2)
        >>> len(small.results) <= 2
        True
    """
    if not isinstance(result, DocumentSearchResult):
        raise InvalidInputError("result must be a DocumentSearchResult")
    for name, value in (("max_records", max_records), ("max_characters", max_characters)):
        checked_int(value, f"{name} must be a positive integer")
    results, left = _shrink(result.results, max_records, max_characters)
    suggestions, _ = _shrink(result.suggestions, max_records, left)
    return result.model_copy(update={"results": results, "suggestions": suggestions})
