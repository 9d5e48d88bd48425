"""Argument checks in front of ``BaseStore``'s convenience methods (used by ``MnemonStore``).

LangGraph's ``BaseStore.get`` / ``put`` / ``delete`` / ``search`` / ``list_namespaces`` (and
their async twins) iterate the namespace and call ``str(key)`` before an op reaches
``batch()``, so a namespace that is not a sequence raises ``TypeError`` and a key whose
``str()`` fails raises ``ValueError`` there. These overrides turn both into the errors the
store contract documents (``InvalidNamespaceError``, ``InvalidInputError``) and then hand the
call on unchanged. :func:`check_filter` and :func:`check_window` check the search arguments
every op carries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, InvalidNamespaceError

from langgraph_mnemon.contracts import shown
from langgraph_mnemon.errors import InvalidInputError

__all__ = [
    "OPERATORS",
    "CheckedArguments",
    "NamespaceError",
    "as_namespace",
    "check_filter",
    "check_window",
]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
"""The filter operators ``search`` takes (as ``InMemoryStore`` does)."""
_MAX_FILTER_DEPTH = 32


class NamespaceError(InvalidInputError, InvalidNamespaceError):
    """A namespace the store refuses: LangGraph's ``InvalidNamespaceError`` (what its store
    contract documents) and an :class:`InvalidInputError` (what every bad input here is), so
    ``except MnemonError`` and ``except InvalidNamespaceError`` both catch it."""

    code = "invalid-namespace"


def as_namespace(value: Any, *, optional: bool = False) -> Any:
    """``value`` as a namespace tuple (a list is accepted), or :class:`NamespaceError`."""
    if value is None and optional:
        return None
    if isinstance(value, (tuple, list)):
        return tuple(value)
    raise NamespaceError(
        f"Namespace must be a tuple of strings, e.g. ('users', 'alice'); got {shown(value)}"
    )


def _key(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:  # BaseStore takes any key with a str() (ints, UUIDs); keep that
        return str(value)
    except Exception:
        raise InvalidInputError(
            f"store keys must be strings (got {type(value).__name__})"
        ) from None


@contextmanager
def _namespace_errors() -> Iterator[None]:
    """LangGraph's own namespace checks (``BaseStore.put`` runs them) raise the plain
    ``InvalidNamespaceError``: give it the typed form too."""
    try:
        yield
    except NamespaceError:
        raise
    except InvalidNamespaceError as exc:
        raise NamespaceError(str(exc)) from None


class CheckedArguments(BaseStore):
    """``BaseStore`` whose convenience methods refuse malformed arguments with typed errors."""

    def get(self, namespace: Any, key: Any, **kwargs: Any) -> Any:
        with _namespace_errors():
            return super().get(as_namespace(namespace), _key(key), **kwargs)

    async def aget(self, namespace: Any, key: Any, **kwargs: Any) -> Any:
        with _namespace_errors():
            return await super().aget(as_namespace(namespace), _key(key), **kwargs)

    def put(self, namespace: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        with _namespace_errors():
            super().put(as_namespace(namespace), _key(key), value, *args, **kwargs)

    async def aput(self, namespace: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        with _namespace_errors():
            await super().aput(as_namespace(namespace), _key(key), value, *args, **kwargs)

    def delete(self, namespace: Any, key: Any) -> None:
        with _namespace_errors():
            super().delete(as_namespace(namespace), _key(key))

    async def adelete(self, namespace: Any, key: Any) -> None:
        with _namespace_errors():
            await super().adelete(as_namespace(namespace), _key(key))

    def search(self, namespace_prefix: Any, /, **kwargs: Any) -> Any:
        with _namespace_errors():
            return super().search(as_namespace(namespace_prefix), **kwargs)

    async def asearch(self, namespace_prefix: Any, /, **kwargs: Any) -> Any:
        with _namespace_errors():
            return await super().asearch(as_namespace(namespace_prefix), **kwargs)

    def list_namespaces(self, *, prefix: Any = None, suffix: Any = None, **kwargs: Any) -> Any:
        with _namespace_errors():
            return super().list_namespaces(
                prefix=as_namespace(prefix, optional=True),
                suffix=as_namespace(suffix, optional=True),
                **kwargs,
            )

    async def alist_namespaces(
        self, *, prefix: Any = None, suffix: Any = None, **kwargs: Any
    ) -> Any:
        with _namespace_errors():
            return await super().alist_namespaces(
                prefix=as_namespace(prefix, optional=True),
                suffix=as_namespace(suffix, optional=True),
                **kwargs,
            )


def check_filter(spec: Any, where: str = "filter") -> None:
    """A ``search`` filter: a dict of values or ``$eq $ne $gt $gte $lt $lte`` operators."""
    if not isinstance(spec, Mapping):
        raise InvalidInputError(
            f"{where} must be a dict such as {{'kind': 'note'}} or {{'n': {{'$gt': 2}}}}"
        )
    _check_nesting(spec)  # matching recurses into the filter: keep it shallow
    for key, wanted in spec.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{where} keys must be strings (got {shown(key)})")
        if isinstance(wanted, Mapping) and any(
            isinstance(k, str) and k.startswith("$") for k in wanted
        ):
            unknown = [k for k in wanted if k not in OPERATORS]
            if unknown:
                raise InvalidInputError(
                    f"unknown filter operator {shown(unknown[0])} in {where}[{key!r}]; use "
                    f"{', '.join(sorted(OPERATORS))}"
                )
        elif isinstance(wanted, Mapping):
            check_filter(wanted, f"{where}[{shown(key, 30)}]")


def _check_nesting(value: Any, depth: int = 0) -> None:
    if depth > _MAX_FILTER_DEPTH:
        raise InvalidInputError(f"filter nests deeper than {_MAX_FILTER_DEPTH} levels")
    if isinstance(value, Mapping):
        for item in value.values():
            _check_nesting(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_nesting(item, depth + 1)


def check_window(limit: Any, offset: Any) -> None:
    """``limit`` and ``offset`` of a search or listing: non-negative integers."""
    for name, number in (("limit", limit), ("offset", offset)):
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer (got {shown(number)})")
