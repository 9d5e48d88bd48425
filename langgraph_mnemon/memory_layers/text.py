"""Search text shared by every layer: normalisation, tokens (word runs, Han bigrams), coverage.

Runtime Memory search, Document search and Memory Space anchors tokenise the same way, so a
query matches the same words in every tier.
"""

from __future__ import annotations

import math
import re
import unicodedata

from langgraph_mnemon.errors import InvalidInputError

__all__ = [
    "HAN_RUN",
    "QUERY_TOKEN_CAP",
    "WORD_RUN",
    "is_han",
    "normalize_text",
    "required_coverage",
    "tokenize",
]

QUERY_TOKEN_CAP = 64
_SPACES = re.compile(r"\s+")
# Code points of the Han script (Unicode 16 ``Script=Han``), as ``[\p{Script=Han}]`` would match.
_HAN_RANGES = (
    (0x2E80, 0x2E99),
    (0x2E9B, 0x2EF3),
    (0x2F00, 0x2FD5),
    (0x3005, 0x3005),
    (0x3007, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303B),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFA6D),
    (0xFA70, 0xFAD9),
    (0x16FE2, 0x16FE3),
    (0x16FF0, 0x16FF6),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B81D),
    (0x2B820, 0x2CEAD),
    (0x2CEB0, 0x2EBE0),
    (0x2EBF0, 0x2EE5D),
    (0x2F800, 0x2FA1D),
    (0x30000, 0x3134A),
    (0x31350, 0x33479),
)
_HAN_CLASS = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in _HAN_RANGES)
_HAN_RUN = re.compile(f"[{_HAN_CLASS}]+")
_HAN_CHAR = re.compile(f"[{_HAN_CLASS}]")
# ``[\w-]`` under Python's Unicode database is exactly ``[\p{L}\p{N}_-]`` (letters, numbers,
# underscore, hyphen): str.isalnum() is true precisely for the L* and N* categories.
_WORD_RUN = re.compile(r"[\w-]+")
HAN_RUN = _HAN_RUN
WORD_RUN = _WORD_RUN


def normalize_text(text: str) -> str:
    """NFKC, lowercase, whitespace runs collapsed to one space, trimmed (search comparisons)."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def is_han(char: str) -> bool:
    """Whether ``char`` is a Han character (a Han token is indexed as uni/bigrams)."""
    return _HAN_CHAR.match(char) is not None


def tokenize(text: str, max_tokens: int = QUERY_TOKEN_CAP) -> list[str]:
    """Search tokens of ``text`` in order of first appearance, deduplicated, ≤ ``max_tokens``.

    The text is NFKC-normalised and lowercased. Han runs of one or two characters are kept
    whole; longer Han runs become overlapping bigrams. Everything else yields runs of letters,
    numbers, ``_`` and ``-`` of at least two characters.

    >>> tokenize("数据库 migration 计划 v2")
    ['数据', '据库', 'migration', '计划', 'v2']
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a string (got {type(text).__name__})")
    norm = normalize_text(text)
    tokens: list[str] = []
    seen: set[str] = set()

    def add(token: str) -> bool:
        if token not in seen:
            seen.add(token)
            tokens.append(token)
        return len(tokens) >= max_tokens

    if max_tokens <= 0:
        return tokens
    pos = 0
    for match in _HAN_RUN.finditer(norm):
        for word in _WORD_RUN.findall(norm, pos, match.start()):
            if len(word) >= 2 and add(word):
                return tokens
        run = match.group()
        if len(run) <= 2:
            if add(run):
                return tokens
        else:
            for i in range(len(run) - 1):
                if add(run[i : i + 2]):
                    return tokens
        pos = match.end()
    for word in _WORD_RUN.findall(norm, pos):
        if len(word) >= 2 and add(word):
            return tokens
    return tokens


def required_coverage(token_count: int) -> int:
    """Tokens a Document must contain to match: 0 → 0, fewer than 4 → 1, else max(2, ⌈n/4⌉)."""
    if token_count <= 0:
        return 0
    if token_count < 4:
        return 1
    return max(2, math.ceil(token_count / 4))
