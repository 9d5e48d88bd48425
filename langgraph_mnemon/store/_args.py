"""Argument checks in front of ``BaseStore``'s convenience methods (used by ``MnemonStore``).

LangGraph's ``BaseStore.get`` / ``put`` / ``delete`` / ``search`` / ``list_namespaces`` (and
their async twins) iterate the namespace and call ``str(key)`` before an op reaches
``batch()``, so a namespace that is not a sequence raises ``TypeError`` and a key whose
``str()`` fails raises ``ValueError`` there. These overrides turn both into the errors the
store contract documents (``InvalidNamespaceError``, ``InvalidInputError``) and then hand the
call on unchanged. :func:`check_labels` and :func:`check_write_namespace` are LangGraph's
namespace rules (``_validate_namespace``) with messages that say what to do;
:func:`check_filter` and :func:`check_window` check the search arguments every op carries.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError

from langgraph_mnemon.contracts import shown, text_problem
from langgraph_mnemon.errors import InvalidInputError, InvalidNamespaceError

__all__ = [
    "OPERATORS",
    "CheckedArguments",
    "NamespaceError",
    "as_namespace",
    "check_filter",
    "check_labels",
    "check_window",
    "check_write_namespace",
]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
"""The filter operators ``search`` takes (as ``InMemoryStore`` does)."""
_MAX_FILTER_DEPTH = 32


_RESERVED_ROOT = "langgraph"


class NamespaceError(InvalidNamespaceError, LangGraphNamespaceError):
    """A namespace the store refuses: our :class:`~langgraph_mnemon.errors.InvalidNamespaceError`
    (an :class:`InvalidInputError`, like every bad input here) and LangGraph's
    ``InvalidNamespaceError`` (what its store contract documents), so ``except MnemonError``
    and either ``except InvalidNamespaceError`` catch it."""


def as_namespace(value: Any, *, optional: bool = False) -> Any:
    """``value`` as a namespace tuple (a list is accepted), or :class:`NamespaceError`."""
    if value is None and optional:
        return None
    if isinstance(value, (tuple, list)):
        return tuple(value)
    raise NamespaceError(
        f"Namespace must be a tuple of strings, e.g. ('users', 'alice'); got {shown(value)}"
    )


def check_labels(path: Any) -> tuple[str, ...]:
    """The labels of a namespace (or of a prefix, suffix or match path) as LangGraph takes them:
    strings, none empty, none holding ``.`` (LangGraph's stores join labels with dots) or NUL.

    Args:
        path: A tuple (or list) of labels; ``()`` is accepted (a prefix of everything).

    Returns:
        The labels as a tuple.

    Raises:
        NamespaceError: a label is not a non-empty string without ``.`` or NUL.

    Example:
        >>> check_labels(["users", "alice"])
        ('users', 'alice')
    """
    path = as_namespace(path)
    for label in path:
        if not isinstance(label, str):
            raise NamespaceError(
                f"Namespace labels must be strings; got {shown(label)} in {shown(path)}: "
                "convert it, e.g. str(user_id)"
            )
        if not label:
            raise NamespaceError(
                f"Namespace labels cannot be empty strings (in {shown(path)}): drop the empty "
                "label or give it a name"
            )
        if "." in label:
            raise NamespaceError(
                f"Namespace label {shown(label)} contains a period ('.'), which LangGraph "
                "stores use to join labels: split it into two labels or use '-' or '_'"
            )
        problem = text_problem(label)  # NUL (LangGraph refuses it), a lone surrogate
        if problem is not None:
            raise NamespaceError(f"Namespace label {shown(label)} {problem}")
    return path


def check_write_namespace(namespace: Any, *, reserved_ok: bool = False) -> tuple[str, ...]:
    """A namespace a ``put`` may write into: :func:`check_labels`, at least one label, and not
    under the root ``"langgraph"`` that LangGraph reserves. Like LangGraph's stores, only the
    public ``put`` refuses that root: a ``PutOp`` given to ``batch`` may use it
    (``reserved_ok``), as LangGraph's own code does.

    Raises:
        NamespaceError: the namespace is empty, has a bad label or starts with "langgraph".

    Example:
        >>> check_write_namespace(("langgraph", "x"))
        Traceback (most recent call last):
        NamespaceError: The namespace root "langgraph" is reserved ...
    """
    namespace = check_labels(namespace)
    if not namespace:
        raise NamespaceError(
            "Namespace cannot be empty: give at least one label, e.g. ('memories',)"
        )
    if namespace[0] == _RESERVED_ROOT and not reserved_ok:
        raise NamespaceError(
            f'The namespace root "langgraph" is reserved by LangGraph (got {shown(namespace)}): '
            "choose another first label, e.g. ('app', *namespace)"
        )
    return namespace


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
    except LangGraphNamespaceError as exc:
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
            # Ours first: BaseStore.put's own namespace check says less about what to do.
            super().put(check_write_namespace(namespace), _key(key), value, *args, **kwargs)

    async def aput(self, namespace: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        with _namespace_errors():
            await super().aput(check_write_namespace(namespace), _key(key), value, *args, **kwargs)

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


_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


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
        if where == "filter" and not _FILTER_KEY.match(key):
            raise InvalidInputError(
                f"Invalid filter key {shown(key, 60)}: a filter key holds only letters, digits, "
                "'_', '-' and '.' (a dot reaches into a nested value), as in LangGraph's SQL "
                "stores; filter on a nested dict instead for other names"
            )
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
