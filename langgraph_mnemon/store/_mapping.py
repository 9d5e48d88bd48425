"""How the store facade maps LangGraph namespaces, keys, values and filters to Memory Spaces
and rows (see :mod:`langgraph_mnemon.store._facade` for the whole mapping)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from langgraph_mnemon.contracts import check_text, safe_text, shown
from langgraph_mnemon.errors import (
    InvalidInputError,
)
from langgraph_mnemon.memory_layers.kernel import TRIGGERS
from langgraph_mnemon.memory_layers.spaces import KeyedItems, KeyedRow, check_minutes
from langgraph_mnemon.store._args import (
    NamespaceError,
    check_filter,
    check_labels,
    check_window,
    check_write_namespace,
)
from langgraph_mnemon.store._index import check_fields

if TYPE_CHECKING:
    from langgraph_mnemon.contracts import Scope
    from langgraph_mnemon.memory_layers.spaces import MemoryRecord, MemorySpaces, SpaceRecord


NAMESPACE_PREFIX = "LangGraph store namespace: "
"""How a store space's description starts; the namespace follows as a JSON list."""
MAX_KEY_CHARS = 1000
"""Longest key (it is kept in the row's metadata, whose values are limited to 1000 chars)."""
MAX_VALUE_CHARS = 65_536
"""Longest value, measured as its JSON text (the Memory Space content limit)."""

_SPACE_ID_PREFIX = "store-"
_USER_PREFIX = "user:"
_NATIVE = "mnemos"
_MAX_NAMESPACE_JSON = 500 - len(NAMESPACE_PREFIX)
_MAX_NAME = 120
_PAGE = 500
_MAX_RECALL = 50
_RANKED = "exhaustive-v1"  # query search: the fusion's full ranking, no strict cut
_KEY = "store_key"
_CREATED = "store_created_at"
_INDEXED = "store_indexed"
_TEXT = "store_index_text"  # a digest of the index text when it is not the whole value
_MEMORY_ID = re.compile(r"^[0-9a-f]{32}$")
_TRIGGERS = TRIGGERS


# --------------------------------------------------------------------------------------------
# Namespace mapping


def _namespace_json(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=65_536)
def _space_id(namespace: tuple[str, ...], owner: str | None = None) -> str:
    """The id of the space of ``namespace``: of the local user (``owner`` None), as before
    scopes, or of one user (``user:alice``), whose key is hashed in so users never share one."""
    text = _namespace_json(namespace)
    if owner is not None:  # an owner key is percent-quoted: it holds no newline
        text = f"{owner}\n{text}"
    digest = hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
    return _SPACE_ID_PREFIX + digest


def _store_owner(owner: str | None) -> bool:
    """Whether a space of ``owner`` can be a store space (the local user's or one user's)."""
    return owner is None or owner.startswith(_USER_PREFIX)


def _space_name(namespace: tuple[str, ...]) -> str:
    name = "store:" + "/".join(namespace)
    return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"


def _description(namespace: tuple[str, ...]) -> str:
    return NAMESPACE_PREFIX + _namespace_json(namespace)


def _namespace_of(record: SpaceRecord) -> tuple[str, ...] | None:
    """The namespace a store space serves, or None for any other Memory Space."""
    if not record.id.startswith(_SPACE_ID_PREFIX) or record.provider_id != _NATIVE:
        return None
    if not _store_owner(record.owner):
        return None
    if not record.description.startswith(NAMESPACE_PREFIX):
        return None
    try:
        labels = json.loads(record.description[len(NAMESPACE_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        return None
    namespace = tuple(labels)
    return namespace if _space_id(namespace, record.owner) == record.id else None


def _check_namespace(namespace: Any) -> tuple[str, ...]:
    """LangGraph's namespace rules for a ``PutOp`` (the reserved root allowed, as in its
    stores' ``batch``), plus the facade's length limit."""
    namespace = check_write_namespace(namespace, reserved_ok=True)
    if len(_namespace_json(namespace)) > _MAX_NAMESPACE_JSON:
        raise NamespaceError(
            f"Namespace {namespace!r} is too long for a Memory Space: keep its labels under "
            f"{_MAX_NAMESPACE_JSON} characters in total (as a JSON list)"
        )
    return namespace


_check_labels = check_labels


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInputError(
            f"unknown namespace match type {condition.match_type!r}; use 'prefix' or 'suffix'"
        )
    return all(want == "*" or have == want for have, want in pairs)


# --------------------------------------------------------------------------------------------
# Input checks


def _check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInputError(f"store keys must be strings (got {type(key).__name__})")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(
            f"the key is {len(key)} characters; the limit is {MAX_KEY_CHARS}: use a shorter key"
        )
    return check_text(key, "the store key")


def _encode_value(value: Any) -> str:
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"store values must be dicts (got {type(value).__name__}); wrap it, e.g. "
            '{"content": ...}'
        )
    if not all(isinstance(k, str) for k in value):
        raise InvalidInputError("store values must have string keys (JSON objects)")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"store values must be JSON-serializable ({type(exc).__name__}: "
            f"{safe_text(exc)[:200]}); convert dates, sets and objects to strings, lists or "
            "numbers first, and keep nesting shallow"
        ) from None
    # JSON escapes NUL itself; a lone surrogate would reach the database unencodable.
    check_text(text, "the store value")
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidInputError(
            f"the value is {len(text)} characters as JSON; the limit is {MAX_VALUE_CHARS}: "
            "split it over several keys or keep large texts as Documents"
        )
    return text


def _check_index(index: Any) -> bool:
    """A put's ``index``: None (the store's fields), False (not ranked by query search) or a
    list of field paths (see :mod:`._index`); whether the item is ranked."""
    if index is None:
        return True
    if index is False:
        return False
    if isinstance(index, list):
        check_fields(index)
        return True
    raise InvalidInputError(
        "index must be None, False or a list of field paths such as ['content']"
    )


def _check_refresh(refresh_ttl: Any) -> None:
    if not isinstance(refresh_ttl, bool):
        raise InvalidInputError(f"refresh_ttl must be True or False (got {shown(refresh_ttl)})")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(have: Any, operator: str, want: Any) -> bool:
    if have is _MISSING:  # as LangGraph's SQL stores: a missing field satisfies no operator
        return False
    if operator == "$eq":
        return _equal(have, want)
    if operator == "$ne":
        return not _equal(have, want)
    if _number(have) and _number(want):
        pair: tuple[Any, Any] = (have, want)  # int and float compare exactly, however large
    elif isinstance(have, str) and isinstance(want, str):
        pair = (have, want)
    else:  # missing or incomparable values never satisfy an ordering
        return False
    left, right = pair
    return {
        "$gt": left > right,
        "$gte": left >= right,
        "$lt": left < right,
        "$lte": left <= right,
    }[operator]


def _equal(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_compare(have, op, arg) for op, arg in want.items())
        return isinstance(have, Mapping) and all(
            _equal(_field(have, k), v) for k, v in want.items()
        )
    if isinstance(want, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(want)
            and all(_equal(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool((None if have is _MISSING else have) == want)  # missing equals None


_MISSING: Any = object()


def _field(value: Mapping[str, Any], key: str) -> Any:
    """The value a filter key names, as LangGraph's SQL stores read it: a dotted key is a path
    into nested objects (``"user.access-level"``); a key the path does not reach is read as
    one literal key (``InMemoryStore``'s reading), else it is ``_MISSING``."""
    if "." in key:
        found: Any = value
        for part in key.split("."):
            found = found.get(part, _MISSING) if isinstance(found, Mapping) else _MISSING
            if found is _MISSING:
                break
        if found is not _MISSING:
            return found
    return value.get(key, _MISSING)


def _passes(value: Mapping[str, Any], spec: Mapping[str, Any] | None) -> bool:
    return not spec or all(_equal(_field(value, k), v) for k, v in spec.items())


def _check_op(op: Any) -> None:
    """Validate one op completely before any op of the batch runs."""
    if isinstance(op, PutOp):
        if op.value is not None:
            _check_namespace(op.namespace)
        else:
            _check_labels(op.namespace)
        _check_key(op.key)
        if op.value is not None:
            _encode_value(op.value)
            _check_index(op.index)
        if op.value is not None:
            check_minutes(op.ttl, "ttl")
    elif isinstance(op, GetOp):
        _check_labels(op.namespace)
        _check_key(op.key)
        _check_refresh(op.refresh_ttl)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
        _check_refresh(op.refresh_ttl)
        check_window(op.limit, op.offset)
        if op.filter is not None:
            check_filter(op.filter)
        if op.query is not None:
            check_text(op.query, "query", nul="strip")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if not isinstance(condition, MatchCondition):
                raise InvalidInputError("match_conditions must be MatchCondition objects")
            _check_labels(tuple(condition.path))
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(
                    f"unknown namespace match type {condition.match_type!r}; use 'prefix' or "
                    "'suffix'"
                )
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidInputError("max_depth must be a positive integer or None")
        check_window(op.limit, op.offset)
    else:
        raise InvalidInputError(
            f"unknown store operation {type(op).__name__}; use GetOp, PutOp, SearchOp or "
            "ListNamespacesOp"
        )


# --------------------------------------------------------------------------------------------
# Rows ↔ items


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass
class _Row:
    """One item as stored: the memory row, its key and decoded value."""

    key: str
    value: dict[str, Any]
    memory_id: str
    created_at: float
    updated_at: float
    indexed: bool
    native: bool  # written by this facade (False: a row from another Mnemon path)
    ttl: float | None = None  # minutes to live, when known (keyed reads)

    def item(self, namespace: tuple[str, ...]) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=namespace,
            created_at=_time(self.created_at),
            updated_at=_time(self.updated_at),
        )

    def search_item(self, namespace: tuple[str, ...], score: float | None) -> SearchItem:
        return SearchItem(
            namespace=namespace,
            key=self.key,
            value=self.value,
            created_at=_time(self.created_at),
            updated_at=_time(self.updated_at),
            score=score,
        )


def _row(insight: MemoryRecord | KeyedRow) -> _Row:
    """An item from a row: a keyed row by its ``store_key`` column, a recall result by its
    metadata, any other row (of another Mnemon path) by its memory id."""
    written = insight.created_at if insight.created_at is not None else time.time()
    meta = insight.metadata
    key = insight.key if isinstance(insight, KeyedRow) else meta.get(_KEY)
    if isinstance(key, str):
        try:
            value = json.loads(insight.content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            first = meta.get(_CREATED)
            return _Row(
                key=key,
                value=value,
                memory_id=insight.id,
                created_at=float(first) if _number(first) else written,
                updated_at=written,
                indexed=meta.get(_INDEXED) is not False,
                native=True,
                ttl=insight.ttl_minutes if isinstance(insight, KeyedRow) else None,
            )
    return _Row(
        key=insight.id,
        value={
            "content": insight.content,
            "category": insight.category,
            "importance": insight.importance,
            "tags": list(insight.tags),
            "entities": list(insight.entities),
            "source": insight.source,
            "metadata": dict(insight.metadata),
        },
        memory_id=insight.id,
        created_at=written,
        updated_at=written,
        indexed=True,
        native=False,
    )


class _Batch:
    """One batch's scope, its keyed-items entry and the store spaces it resolved so far.

    ``owner`` is the user key whose namespaces the batch uses; ``None`` is the local user.
    ``at`` is the index of the op running and ``applied`` the puts committed so far (what a
    failure reports).
    """

    def __init__(
        self, spaces: MemorySpaces, owner: str | None = None, keyed: KeyedItems | None = None
    ) -> None:
        self.spaces = spaces
        self.keyed = keyed if keyed is not None else KeyedItems(spaces)
        self.owner = owner
        self.records: dict[str, SpaceRecord] = {}
        self.at = 0
        self.applied: list[PutOp] = []
        self.recall_spaces: dict[str, tuple[str, ...]] = {}
        self.scope: Scope | None = None  # what the facade keys its per-scope caches by

    def home_id(self, namespace: tuple[str, ...]) -> str:
        """The id of the space this batch writes ``namespace`` into."""
        return _space_id(namespace, self.owner)

    def reads(self, record: SpaceRecord) -> bool:
        """Whether this batch reads the store space ``record``: a user's own spaces only; the
        local user's every store space its view lists."""
        return self.owner is None or record.owner == self.owner


# --------------------------------------------------------------------------------------------
