"""What a store item is indexed by: the store's index config and a put's ``index`` fields.

The config takes LangGraph's ``IndexConfig`` keys: ``embed`` (``"provider:model"`` for
LangChain's ``init_embeddings``, an ``Embeddings`` object or a function ``texts -> vectors``),
``dims`` (the size of its vectors, required with ``embed`` and checked on every vector) and
``fields`` (JSON paths, default ``["$"]``: the whole value). Without ``embed`` the host's
embedder (``embedding.*``) serves the store. A put's ``index=[paths]`` replaces the config's
fields for that item.

Paths use LangGraph's syntax (``a.b``, ``a[0]``, ``a[-1]``, ``a[*].b``, ``*``, ``{a,b.c}``)
and select text as LangGraph's stores do (``langgraph.store.base.embed.get_text_at_path``):
strings as they are, numbers and booleans as text, lists and dicts as JSON. The texts of all
paths, one per line, are the item's index text: its keyword terms and its one vector. ``["$"]``
indexes the stored JSON text itself. A path that selects nothing adds nothing; an item whose
paths select no text is not ranked by query search (LangGraph's SQL stores give it no vector).

Example:
    >>> index = StoreIndex.of({"dims": 2, "embed": lambda t: [[1.0, 0.0] for _ in t]})
    >>> index.text({"title": "Tea", "body": "Green"}, ["title"])
    'Tea'
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langgraph_mnemon.adapters.embeddings import embedder_from
from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.spaces import Embedder

__all__ = ["WHOLE", "StoreIndex", "check_fields", "text_digest"]

WHOLE = "$"
"""The path of the whole value."""
_KEYS = frozenset({"dims", "embed", "fields", "text_fields", "distance_type", "ann_index_config"})
_MAX_FIELDS = 32
_MAX_PATH = 300


def check_fields(fields: Any, where: str = "index") -> tuple[str, ...]:
    """``fields`` as a tuple of valid paths, or :class:`InvalidInputError`.

    Example:
        >>> check_fields(["title", "tags[*].name"])
        ('title', 'tags[*].name')
    """
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
        raise InvalidInputError(
            f"{where} must be a non-empty list of field paths such as ['title', 'tags[*]'] "
            f"(got {shown(fields)})"
        )
    if len(fields) > _MAX_FIELDS:
        raise InvalidInputError(f"{where} takes at most {_MAX_FIELDS} field paths")
    for path in fields:
        _check_path(path, where)
    return tuple(fields)


def _check_path(path: Any, where: str) -> None:
    if not isinstance(path, str) or not path.strip() or len(path) > _MAX_PATH:
        raise InvalidInputError(
            f"{where} paths must be non-empty strings of at most {_MAX_PATH} characters "
            f"(got {shown(path)})"
        )
    if path == WHOLE:
        return
    for token in tokenize_path(path):
        problem = _token_problem(token)
        if problem:
            raise InvalidInputError(
                f"{where} path {path!r}: {problem}; write paths like 'a.b', 'a[0]', 'a[*].b' "
                "or '{a,b}'"
            )


def _token_problem(token: str) -> str | None:
    if token.startswith("["):
        inner = token[1:-1] if token.endswith("]") else None
        if inner is None or not (inner == "*" or inner.lstrip("-").isdigit()):
            return f"{token!r} is not an index ([0], [-1] or [*])"
    elif token.startswith("{"):
        inner = token[1:-1] if token.endswith("}") else None
        if inner is None or not all(f.strip() for f in inner.split(",")):
            return f"{token!r} is not a field list such as {{a,b}}"
    elif any(c in token for c in "[]{}"):
        return f"{token!r} has an unbalanced bracket"
    return None


def text_digest(text: str) -> str:
    """A short fingerprint of an index text (kept in the row's metadata, so a put of the
    same value with other index fields is not mistaken for an identical re-put)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass(frozen=True)
class StoreIndex:
    """A store's index config, checked: its default ``fields`` and its own embedder
    (``None``: the host's)."""

    fields: tuple[str, ...] = (WHOLE,)
    embedder: Embedder | None = None
    dims: int | None = None
    given: Mapping[str, Any] | None = None
    """The config as given (shown back as ``index_config``, as LangGraph's stores do)."""

    @classmethod
    def of(cls, index: Any) -> StoreIndex:
        """The checked form of a store's ``index`` config (``None``: the defaults).

        Raises:
            InvalidInputError: ``index`` is not a dict of ``dims`` / ``embed`` / ``fields``,
                ``embed`` comes without ``dims`` (or ``dims`` without ``embed``), a path is
                malformed, or ``embed`` cannot be loaded.

        Example:
            >>> StoreIndex.of({"fields": ["title"]}).fields
            ('title',)
        """
        if index is None or isinstance(index, StoreIndex):
            return index or cls()
        if not isinstance(index, Mapping):
            raise InvalidInputError(
                "index must be a dict such as {'dims': 1536, 'embed': 'openai:text-embedding-"
                f"3-small', 'fields': ['$']}} (got {type(index).__name__})"
            )
        unknown = sorted(str(k) for k in index if k not in _KEYS)
        if unknown:
            raise InvalidInputError(
                f"unknown index settings {', '.join(unknown)}; the store takes dims, embed and "
                "fields (text_fields, distance_type and ann_index_config as LangGraph's SQL "
                "stores name them)"
            )
        fields = check_fields(_fields_of(index), "index['fields']")
        embed, dims = index.get("embed"), index.get("dims")
        if embed is None:
            if dims is not None:
                raise InvalidInputError(
                    "index['dims'] goes with index['embed']; without embed the host's "
                    "embedder (embedding.*) is used and dims is not needed"
                )
            return cls(fields, given=dict(index))
        if dims is None:
            raise InvalidInputError(
                "index['embed'] needs index['dims']: the size of its vectors (e.g. 1536 for "
                "openai:text-embedding-3-small)"
            )
        return cls(fields, embedder_from(embed, dims=dims), dims, dict(index))

    def config(self) -> dict[str, Any] | None:
        """The config as given (``index_config``); None when the store was given none."""
        return None if self.given is None else dict(self.given)

    def embeddings(self) -> Any:
        """The LangChain ``Embeddings`` object behind the store's own embedder (as
        ``store.embeddings`` of LangGraph's stores), or None (the host's embedder, a
        function)."""
        inner = getattr(self.embedder, "inner", self.embedder)
        return getattr(inner, "embeddings", None)

    def text(self, value: Mapping[str, Any], fields: Sequence[str] | None = None) -> str | None:
        """The text ``value`` is indexed by under ``fields`` (default: the config's);
        ``None`` when it is the whole value (the stored JSON text).

        Example:
            >>> StoreIndex().text({"a": {"b": ["x", "y"]}}, ["a.b[*]"])
            'x\\ny'
        """
        chosen = tuple(fields) if fields else self.fields
        if chosen == (WHOLE,):
            return None
        texts: list[str] = []
        for path in chosen:
            texts.extend(get_text_at_path(value, path))
        return "\n".join(t for t in texts if t)


def _fields_of(index: Mapping[str, Any]) -> Any:
    """The config's paths: ``fields`` (LangGraph's ``IndexConfig``) or ``text_fields`` (its
    SQLite store's name); ``None`` is the default. ``distance_type`` may only be cosine, the
    one the store's dense side ranks by. ``ann_index_config`` (pgvector's ANN index tuning:
    index kind, vector type) changes speed and precision, not results, in LangGraph's store;
    this store ranks exactly in its own tables, so it is accepted and has nothing to tune.

    Raises:
        InvalidInputError: both names with other paths, or another distance.
    """
    distance = index.get("distance_type")
    if distance not in (None, "cosine"):
        raise InvalidInputError(
            f"index['distance_type'] {shown(distance)} is not available: the store ranks by "
            "cosine similarity (with keyword relevance); drop it or use 'cosine'"
        )
    fields, text_fields = index.get("fields"), index.get("text_fields")
    if fields is not None and text_fields is not None and list(fields) != list(text_fields):
        raise InvalidInputError(
            "index['fields'] and index['text_fields'] name the same thing; give only fields"
        )
    chosen = fields if fields is not None else text_fields
    if isinstance(chosen, str):  # LangGraph's stores take one path as a string too
        chosen = [chosen]
    return [WHOLE] if chosen is None else chosen
