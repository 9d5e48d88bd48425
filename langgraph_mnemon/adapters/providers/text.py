"""Text analysis of the native provider's keyword index: the same terms for rows and queries.

NFKC + lowercase; Han runs become overlapping bigrams (a one-character run stays whole); other
text splits into runs of letters and digits (``feature-x_1`` → ``feature``, ``x``, ``1``), an
English possessive ``'s`` is dropped, single letters are dropped, common English function words
are dropped (unless the text has nothing else), and words are reduced to their Snowball
(Porter 2) English stem. Terms contain only letters and digits, so they pass unchanged through
SQLite FTS5 (``unicode61``) and PostgreSQL (``to_tsvector('simple', …)``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

__all__ = ["STOPWORDS", "analyze", "query_terms"]

_HAN = (
    "\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0002ffff\U00030000-\U0003134f"
)
_SEGMENT = re.compile(rf"([{_HAN}]+)|([^\W_]+(?:['’][^\W_]+)*)")
_POSSESSIVE = re.compile(r"['’]s$")

_STOPWORD_TEXT = (
    "a about above after again against all also am an and any are aren't as at be because been "
    "before being below between both but by can could couldn't did didn't do does doesn't doing "
    "don't down during each few for from further had hadn't has hasn't have haven't having he "
    "he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've "
    "if in into is isn't it it's its itself just let's me more most mustn't my myself no nor "
    "not of off on once only or other ought our ours ourselves out over own same shan't she "
    "she'd she'll she's should shouldn't so some such than that that's the their theirs them "
    "themselves then there there's these they they'd they'll they're they've this those through "
    "to too under until up very was wasn't we we'd we'll we're we've were weren't what what's "
    "when when's where where's which while who who's whom why why's will with won't would "
    "wouldn't you you'd you'll you're you've your yours yourself yourselves "
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Common English function words (question words included); dropped from queries and rows."""

_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _words(text: str) -> list[tuple[str, bool]]:
    """(word, is_stopword) pairs of ``text`` in order, Han bigrams included."""
    norm = unicodedata.normalize("NFKC", text).lower()
    out: list[tuple[str, bool]] = []
    for han, word in _SEGMENT.findall(norm):
        if han:
            if len(han) == 1:
                out.append((han, False))
            else:
                out.extend((han[i : i + 2], False) for i in range(len(han) - 1))
            continue
        word = word.replace("’", "'")
        if word in STOPWORDS:
            out.append((word, True))
            continue
        word = _POSSESSIVE.sub("", word)
        for part in word.split("'"):
            if len(part) < 2 and not part.isdigit():
                continue
            if part in STOPWORDS:
                out.append((part, True))
                continue
            out.append((_stem(part) if part.isalpha() and part.isascii() else part, False))
    return out


def analyze(text: str) -> list[str]:
    """Index terms of ``text`` in order, with repetitions (stopwords dropped)."""
    return [word for word, stop in _words(text) if not stop]


def query_terms(text: str, max_terms: int = 64) -> list[str]:
    """Distinct search terms of a query, in order; stopwords only when nothing else is left."""
    words = _words(text)
    content = [w for w, stop in words if not stop]
    chosen = content or [w for w, _ in words]
    seen: dict[str, None] = {}
    for term in chosen:
        seen.setdefault(term, None)
        if len(seen) >= max_terms:
            break
    return list(seen)
