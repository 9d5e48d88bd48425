"""What the mem0 provider needs around mem0 itself: a guarded import and the mapping between
mem0 payloads and Memory Space rows and receipts (the LangChain adapters mem0 is handed are in
:mod:`._mem0_langchain`).

Nothing here imports ``mem0``, ``qdrant_client`` or LangChain at module import: :func:`load_mem0`
does, on a provider's first operation, with telemetry forced off and mem0's home folder pointed
away from ``~/.mem0``; so building the provider (the host builds every configured one) is cheap.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_mnemon.adapters.providers.text import analyze, query_terms
from langgraph_mnemon.contracts import check_text
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import (
    MAX_CONTENT_CHARS,
    MemoryRecord,
    RememberItem,
    SpaceBinding,
)
from langgraph_mnemon.storage.lazy import lazy_attributes

__all__ = [
    "INSTALL_HINT",
    "add_receipt",
    "finite_score",
    "keyword_match",
    "load_mem0",
    "offline_problem",
    "payload_metadata",
    "record_from_item",
    "scope_filters",
]

INSTALL_HINT = "pip install 'langgraph-mnemon[mem0]'"
_META_PREFIX = "m:"
_OWN_KEYS = frozenset({"category", "importance", "tags", "entities", "source"})
_IMPORT_LOCK = threading.Lock()
_log = logging.getLogger(__name__)


# The LangChain adapters moved to ._mem0_langchain (LangChain loads on first use).
__getattr__ = lazy_attributes(
    __name__,
    {"EmbedderEmbeddings": "._mem0_langchain", "NoChatModel": "._mem0_langchain"},
)


# --------------------------------------------------------------------------------- import


def load_mem0(home: Path) -> Any:
    """mem0's ``Memory`` class, imported with telemetry off and no write under ``~/.mem0``.

    mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` once, at import, and creates ``MEM0_DIR``
    (default ``~/.mem0``) with a ``config.json`` right then. ``MEM0_DIR`` is set to ``home``
    only for the import (a value the user set is kept); ``MEM0_TELEMETRY=False`` stays set so
    child processes inherit it.

    Args:
        home: the folder mem0 may use as its home (under the provider's folder).

    Returns:
        The ``mem0.Memory`` class.

    Raises:
        ProviderError: mem0ai is not installed (code ``not-installed``).

    Example:
        >>> Memory = load_mem0(Path("/data/mem0/home"))
    """
    with _IMPORT_LOCK:
        os.environ["MEM0_TELEMETRY"] = "False"
        borrowed = "MEM0_DIR" not in os.environ
        if borrowed:
            os.environ["MEM0_DIR"] = str(home)
        try:
            import mem0.memory.main as main
            import mem0.memory.telemetry as telemetry
        except ImportError as exc:
            raise ProviderError(
                f"the mem0 provider needs the mem0ai package ({exc}); install it with "
                f"{INSTALL_HINT}",
                code="not-installed",
            ) from None
        finally:
            if borrowed:
                os.environ.pop("MEM0_DIR", None)
        _telemetry_off(main, telemetry)
        _quiet_optional_nlp()
        return main.Memory


class _DropNoSpacy(logging.Filter):
    """Drops mem0's warning that spaCy is absent: its lemmas and entities are optional here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "spaCy is not installed" not in record.getMessage()


def _quiet_optional_nlp() -> None:
    spacy_log = logging.getLogger("mem0.utils.spacy_models")
    if not any(isinstance(f, _DropNoSpacy) for f in spacy_log.filters):
        spacy_log.addFilter(_DropNoSpacy())


def _telemetry_off(main: Any, telemetry: Any) -> None:
    """Switch mem0's telemetry off even when mem0 was imported before us with it on."""
    if telemetry.MEM0_TELEMETRY or main.MEM0_TELEMETRY:
        _log.warning("mem0 was imported with telemetry on; langgraph-mnemon switches it off")
    # mem0 checks these module flags on every call (capture_event, Memory.__init__, notices).
    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False
    client = getattr(telemetry, "client_telemetry", None)
    posthog = getattr(client, "posthog", None)
    if posthog is not None:
        posthog.disabled = True  # a disabled PostHog client captures and sends nothing


def offline_problem(bm25_collections: list[str]) -> str | None:
    """Why mem0 would fetch a model from the network here, or ``None``.

    mem0 downloads spaCy's ``en_core_web_sm`` when spaCy is installed without it, and the
    fastembed ``Qdrant/bm25`` model for collections that carry a ``bm25`` sparse slot.
    """
    if _installed("spacy") and not _installed("en_core_web_sm"):
        return (
            "spaCy is installed without its en_core_web_sm model, which mem0 would download on "
            "first use; install the model (python -m spacy download en_core_web_sm) or "
            "uninstall spaCy"
        )
    if bm25_collections and _installed("fastembed"):
        return (
            f"the Qdrant collection(s) {', '.join(bm25_collections)} carry a bm25 slot, for "
            "which mem0 would download the fastembed Qdrant/bm25 model; use a new collection "
            "(collection=) or uninstall fastembed"
        )
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# --------------------------------------------------------------------------------- mapping


def purge_history(memory: Any, memory_id: str) -> None:
    """Remove a deleted row's text from mem0's history table, so forget is a hard delete.

    mem0 keeps an audit trail (``ADD`` / ``DELETE`` events with the text) and has no public
    call to purge it; the table is ours (under the provider's folder) and ``get_history``
    shows its shape. Raises :class:`ProviderError` when the table cannot be reached.
    """
    db = getattr(memory, "db", None)
    connection = getattr(db, "connection", None)
    lock = getattr(db, "_lock", None)
    if connection is None or lock is None:
        raise ProviderError(
            "mem0's history database is not reachable, so the deleted text may stay in "
            "<path>/history.db; check the mem0ai version (2.2.x is supported)",
            code="history-purge",
        )
    with lock:
        connection.execute("DELETE FROM history WHERE memory_id = ?", (memory_id,))
        connection.commit()


def scope_filters(space: SpaceBinding) -> dict[str, str]:
    """The mem0 entity ids of a space: its ``user_id`` / ``agent_id``, else ``mnemon-<id>``."""
    scope = {k: str(space.config[k]) for k in ("user_id", "agent_id") if space.config.get(k)}
    return scope or {"user_id": f"mnemon-{space.id}"}


def _checked_list(values: tuple[str, ...], what: str) -> list[str]:
    return [check_text(v, what) for v in values]


def payload_metadata(item: RememberItem) -> dict[str, Any]:
    """The mem0 metadata of a write: our fields flat, the caller's metadata under ``m:``.

    The prefix keeps caller keys away from mem0's own payload keys (``data``, ``hash``,
    ``created_at``, ``user_id``, ``expiration_date`` ...), which mem0 would obey or overwrite.

    Raises:
        InvalidInputError: content, tags, entities or metadata hold a NUL or a lone
            surrogate, or the content is empty or longer than ``MAX_CONTENT_CHARS``.
    """
    content = check_text(item.content, "the memory content")
    if not content.strip():
        raise InvalidInputError("the memory content is empty; give the text to remember")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"the memory content has {len(content)} characters; the limit is "
            f"{MAX_CONTENT_CHARS}, so split it into smaller memories"
        )
    meta: dict[str, Any] = {
        "category": item.category,
        "importance": item.importance,
        "source": item.source,
        "tags": _checked_list(item.tags, "a tag"),
        "entities": _checked_list(item.entities, "an entity"),
    }
    for key, value in item.metadata.items():
        check_text(key, "a metadata key")
        if isinstance(value, str):
            check_text(value, f"metadata[{key!r}]")
        meta[_META_PREFIX + key] = value
    return meta


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:  # mem0 writes UTC; a naive value from elsewhere is read as UTC
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _extra(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Caller metadata (``m:`` keys) plus scalar keys another mem0 client wrote."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or not _scalar(value):
            continue
        if key.startswith(_META_PREFIX):
            out[key[len(_META_PREFIX) :]] = value
        elif key not in _OWN_KEYS:
            out.setdefault(key, value)
    return out


def record_from_item(
    item: Mapping[str, Any], space: SpaceBinding, *, score: float | None = None, via: str | None
) -> MemoryRecord:
    """One mem0 result (``search`` / ``get_all`` / ``get``) as a :class:`MemoryRecord`."""
    meta = item.get("metadata") or {}
    if not isinstance(meta, Mapping):
        meta = {}
    importance = meta.get("importance")
    source = meta.get("source")
    return MemoryRecord(
        id=str(item.get("id")),
        content=str(item.get("memory") or ""),
        category=str(meta.get("category") or "general"),
        importance=importance if type(importance) is int else None,
        tags=_strings(meta.get("tags")),
        entities=_strings(meta.get("entities")),
        source=source if isinstance(source, str) else None,
        metadata=_extra(meta),
        score=score,
        matched_via=via,
        created_at=_timestamp(item.get("created_at")),
        space_id=space.id,
        space_name=space.name,
    )


def keyword_match(query: str, content: str) -> bool:
    """Whether ``content`` holds a search term of ``query`` (same analysis as the native
    provider: NFKC, lowercase, stems, Han bigrams)."""
    terms = set(query_terms(query))
    return bool(terms) and not terms.isdisjoint(analyze(content))


def add_receipt(results: list[Any], *, infer: bool) -> dict[str, Any]:
    """The raw receipt of one ``Memory.add`` call from the events mem0 returned.

    ``ADD`` counts as stored, ``UPDATE`` as updated; ``DELETE`` / ``NONE`` or no event at all
    store nothing from this content, so the receipt says ``skipped`` (not committed).
    """
    events = [
        {"id": str(r.get("id")), "event": str(r.get("event") or "").upper()}
        for r in results
        if isinstance(r, Mapping) and r.get("id")
    ]
    added = [e["id"] for e in events if e["event"] == "ADD"]
    updated = [e["id"] for e in events if e["event"] == "UPDATE"]
    base: dict[str, Any] = {"infer": infer, "events": events}
    if added:
        return {
            **base,
            "status": "stored",
            "id": added[0],
            "ids": added + updated,
            "created": len(added),
            "updated": len(updated),
        }
    if updated:
        return {**base, "status": "updated", "id": updated[0], "ids": updated}
    reason = (
        "mem0's extraction kept nothing new from this content"
        if infer
        else "mem0 stored nothing for this content"
    )
    return {**base, "status": "skipped", "id": None, "reason": reason}


def finite_score(value: Any) -> float | None:
    """mem0's score clamped to 0..1, or ``None`` when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))
