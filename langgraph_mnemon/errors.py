"""One error hierarchy for every public entry point.

Every error carries a stable ``code`` (for tools and the HTTP control plane) and a message that
says what to do next. Catch :class:`MnemonError` to handle all of them.

Example:
    >>> from langgraph_mnemon.errors import MnemonError
    >>> try:
    ...     mem.runtime.remove("memory", "no such text")
    ... except MnemonError as exc:
    ...     print(exc.code, exc)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AmbiguousMatchError",
    "AuthorityError",
    "CapacityError",
    "ConflictError",
    "InvalidInputError",
    "MnemonError",
    "NoMatchError",
    "NotFoundError",
    "ProviderError",
    "ReadOnlyError",
    "StorageError",
]


class MnemonError(Exception):
    """Base class of every error raised by langgraph-mnemon."""

    code: str = "mnemon-error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for tool results and HTTP responses."""
        return {"error": self.code, "message": self.message}


class InvalidInputError(MnemonError, ValueError):
    """The caller passed a value the operation cannot accept; nothing was changed."""

    code = "invalid-input"


class CapacityError(MnemonError):
    """The mutation would exceed a byte budget; nothing was changed.

    ``plan`` carries what a maintenance worker needs (a Runtime ``MaintenancePlan`` or a
    Documents capacity plan with LRU candidates).
    """

    code = "capacity"

    def __init__(self, message: str, *, plan: Any = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.plan = plan


class ConflictError(MnemonError):
    """The stored revision changed while the caller was working; nothing was applied."""

    code = "revision-conflict"


class NoMatchError(MnemonError, LookupError):
    """No stored entry matched the text the caller gave."""

    code = "no-match"


class AmbiguousMatchError(MnemonError, LookupError):
    """Several stored entries matched; the caller must give a unique text."""

    code = "ambiguous-match"


class NotFoundError(MnemonError, LookupError):
    """The named object (document, space, node, thread) does not exist."""

    code = "not-found"


class ReadOnlyError(MnemonError):
    """Writes are switched off (``write_enabled=false``) or the object is immutable."""

    code = "read-only"

    @classmethod
    def writes_disabled(cls, what: str) -> ReadOnlyError:
        """The error every layer raises for a mutation while ``write_enabled`` is false."""
        return cls(
            "langgraph-mnemon is configured read-only (write_enabled: false); "
            f"enable writes to change {what}"
        )


class AuthorityError(MnemonError):
    """The caller may not do this from where it is (control plane authority rules).

    Mutations come from loopback only, unless ``remote_access="trusted-host"`` and the request
    carries the configured bearer token; reads come from ``trusted_hosts`` only.
    """

    code = "forbidden"


class ProviderError(MnemonError):
    """A Memory Space provider failed or does not support the requested operation."""

    code = "provider-error"


class StorageError(MnemonError):
    """Stored data is unreadable or invalid, or its lock could not be taken.

    The message names the file; mnemon never overwrites a file it could not read.
    """

    code = "storage-error"
