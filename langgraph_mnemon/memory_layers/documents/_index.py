"""The in-memory inverted index of Document search: substring-exact postings per field.

Documents are numbered; each has postings for word runs (found by scanning one joined
vocabulary string, so a token matches inside longer words) and Han uni/bigrams. A changed
document gets a new number and the old one is marked dead until the next compaction, so
postings are append-only. :mod:`._search` keeps it in step with the committed state and ranks.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langgraph_mnemon.memory_layers.documents._models import DocumentRecord
from langgraph_mnemon.memory_layers.text import HAN_RUN, WORD_RUN, is_han, normalize_text

__all__ = ["Entry", "Fingerprint", "Postings", "Scope", "SearchIndex", "fingerprint"]

Fingerprint = tuple[str, str, str, str, str]
_COMPACT_MIN_DEAD = 256


def fingerprint(record: DocumentRecord) -> Fingerprint:
    """What an entry was built from: hash, title, description (the text), status, update time."""
    return (
        record.content_hash,
        record.title,
        record.description,
        record.status,
        record.updated_at,
    )


@dataclass(slots=True)
class Entry:
    id: str
    fingerprint: Fingerprint
    status: str
    title_n: str
    desc_n: str
    content_n: str
    updated_at: str


def _terms(text: str, words: set[str], han: set[str]) -> None:
    """Collect the substring-searchable units of normalised ``text`` into ``words`` / ``han``."""
    pos = 0
    for match in HAN_RUN.finditer(text):
        words.update(w for w in WORD_RUN.findall(text, pos, match.start()) if len(w) >= 2)
        run = match.group()
        han.update(run)
        han.update(run[i : i + 2] for i in range(len(run) - 1))
        pos = match.end()
    words.update(w for w in WORD_RUN.findall(text, pos) if len(w) >= 2)


class Scope:
    """The searchable documents of one index generation and scope, by document number.

    ``recency`` ranks them by (updated_at, index position): a higher rank is more recent.
    """

    __slots__ = ("by_number", "numbers", "recency", "recent")

    def __init__(self, by_number: dict[int, DocumentRecord], positions: dict[str, int]) -> None:
        self.by_number = by_number
        self.numbers = frozenset(by_number)
        order = sorted(
            by_number, key=lambda n: (by_number[n].updated_at, positions[by_number[n].id])
        )
        self.recency = {num: rank for rank, num in enumerate(order)}
        self.recent = order[::-1]  # most recent first


class Postings:
    """Substring-exact postings for one field: word runs and Han uni/bigrams → document numbers.

    A query token lies inside one word run (it has no separators) or is a Han uni/bigram, so the
    documents containing it are the postings of the vocabulary words containing it (found by
    scanning one joined vocabulary string) or the postings of that Han gram.
    """

    __slots__ = ("han", "joined", "pending", "starts", "vocab", "words")

    def __init__(self) -> None:
        self.words: dict[str, list[int]] = {}
        self.han: dict[str, list[int]] = {}
        self.vocab: list[str] = []
        self.starts: list[int] = []
        self.joined = ""
        self.pending: list[str] = []

    def add(self, num: int, texts: Iterable[str]) -> None:
        words: set[str] = set()
        han: set[str] = set()
        for text in texts:
            _terms(text, words, han)
        for word in words:
            posting = self.words.get(word)
            if posting is None:
                self.words[word] = [num]
                self.pending.append(word)
            else:
                posting.append(num)
        for gram in han:
            posting = self.han.get(gram)
            if posting is None:
                self.han[gram] = [num]
            else:
                posting.append(num)

    def _join_pending(self) -> None:
        """Append the words added since the last lookup to the joined vocabulary string."""
        base = len(self.joined) + 1 if self.vocab else 0
        for word in self.pending:
            self.starts.append(base)
            base += len(word) + 1
        tail = "\x00".join(self.pending)
        self.joined = f"{self.joined}\x00{tail}" if self.vocab else tail
        self.vocab.extend(self.pending)
        self.pending = []

    def docs_for(self, token: str) -> set[int]:
        if is_han(token[0]):
            return set(self.han.get(token, ()))
        if self.pending:
            self._join_pending()
        found: set[int] = set()
        joined, starts, vocab, words = self.joined, self.starts, self.vocab, self.words
        pos = joined.find(token)
        while pos >= 0:
            i = bisect.bisect_right(starts, pos) - 1
            found.update(words[vocab[i]])
            pos = joined.find(token, starts[i] + len(vocab[i]) + 1)
        return found


class SearchIndex:
    """Numbered documents with postings for the title, the description and all three fields.

    A changed document gets a new number and the old one is marked dead until the next
    compaction, so postings are append-only.
    """

    def __init__(self) -> None:
        self.entries: list[Entry | None] = []
        self.by_id: dict[str, int] = {}
        self.any = Postings()
        self.title = Postings()
        self.desc = Postings()
        self.dead = 0
        self.generation: Any = None
        # (index generation, include_archived) -> the searchable documents of that scope
        self.scopes: dict[tuple[Any, bool], Scope] = {}

    def get(self, doc_id: str) -> Entry | None:
        num = self.by_id.get(doc_id)
        return None if num is None else self.entries[num]

    def add(self, record: DocumentRecord, body: str, fingerprint: Fingerprint) -> None:
        self.remove(record.id)
        entry = Entry(
            id=record.id,
            fingerprint=fingerprint,
            status=record.status,
            title_n=normalize_text(record.title),
            desc_n=normalize_text(record.description),
            content_n=normalize_text(body),
            updated_at=record.updated_at,
        )
        self._insert(entry)

    def _insert(self, entry: Entry) -> None:
        num = len(self.entries)
        self.entries.append(entry)
        self.by_id[entry.id] = num
        self.any.add(num, (entry.title_n, entry.desc_n, entry.content_n))
        self.title.add(num, (entry.title_n,))
        self.desc.add(num, (entry.desc_n,))

    def update_meta(self, record: DocumentRecord, fingerprint: Fingerprint) -> None:
        """Status or timestamp changes that leave title, description and body alone."""
        entry = self.get(record.id)
        assert entry is not None
        entry.status = record.status
        entry.updated_at = record.updated_at
        entry.fingerprint = fingerprint

    def remove(self, doc_id: str) -> None:
        num = self.by_id.pop(doc_id, None)
        if num is not None and self.entries[num] is not None:
            self.entries[num] = None
            self.dead += 1

    def compact(self) -> None:
        if self.dead <= max(_COMPACT_MIN_DEAD, len(self.by_id)):
            return
        alive = [e for e in self.entries if e is not None]
        generation = self.generation
        self.__init__()  # type: ignore[misc]
        self.generation = generation
        for entry in alive:
            self._insert(entry)
