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

import errno
from typing import Any

__all__ = [
    "AmbiguousMatchError",
    "AuthorityError",
    "CapacityError",
    "ConflictError",
    "InvalidInputError",
    "InvalidNamespaceError",
    "MnemonError",
    "NoMatchError",
    "NotFoundError",
    "ParticipationError",
    "ProjectNotGrantedError",
    "ProviderError",
    "ReadOnlyError",
    "ScopeMismatchError",
    "SecretKeyError",
    "StorageError",
]


class MnemonError(Exception):
    """Base class of every error raised by langgraph-mnemon."""

    code: str = "mnemon-error"
    # The kernel's decision (layer, channel, trigger, mode, setting, env) when it refused.
    decision: dict[str, Any] | None = None

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for tool results and HTTP responses."""
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.decision is not None:
            out["decision"] = dict(self.decision)
        return out


class InvalidInputError(MnemonError, ValueError):
    """The caller passed a value the operation cannot accept; nothing was changed."""

    code = "invalid-input"


class InvalidNamespaceError(InvalidInputError):
    """A store namespace the ``BaseStore`` facade refuses (empty, an empty label, a label with
    ``.`` or NUL, the reserved root ``"langgraph"``, too long); nothing was written.

    The store raises a subclass that is also LangGraph's
    ``langgraph.store.base.InvalidNamespaceError``, so either ``except`` catches it.

    Example:
        >>> try:
        ...     mem.store().put(("users.alice",), "k", {"v": 1})
        ... except InvalidNamespaceError as exc:
        ...     exc.code
        'invalid-namespace'
    """

    code = "invalid-namespace"


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
            f"set write_enabled=true (env MNEMON_WRITE_ENABLED) and restart to change {what}"
        )


class ParticipationError(MnemonError):
    """The kernel refused the operation: its layer is disabled, its channel is ``off``, or the
    channel is ``manual`` and the request came from a model, the lifecycle or a worker.

    ``code`` is ``layer-disabled``, ``channel-off``, ``channel-manual`` or ``strategy-refused``;
    ``decision`` names the layer, channel, mode, trigger and the setting (with its environment
    variable) that would allow it. Nothing was read or written. The control plane answers 403.

    Example:
        >>> try:
        ...     mem.runtime.add("memory", "Deploys go through CI.")
        ... except ParticipationError as exc:
        ...     exc.decision["setting"]
        'layers.runtime.participation.write'
    """

    code = "participation-refused"

    def __init__(
        self, message: str, *, code: str | None = None, decision: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.decision = decision


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
    """Stored data is unreadable or invalid, its lock could not be taken, or the disk refused.

    The message names the file; mnemon never overwrites a file it could not read. ``code`` says
    which: ``storage-full`` (no space left or quota exceeded), ``storage-read-only`` (a
    read-only file system or database), ``storage-permission`` (access denied),
    ``symlink-refused`` (a managed path is a symbolic link), ``storage-damaged`` (a file that
    cannot be parsed), ``database-locked`` (another writer held the database past the busy
    timeout), ``database-unavailable`` (the database server cannot be reached), or the generic
    ``storage-error``. The control plane answers ``storage-full`` with 507, the others with 503.

    Example:
        >>> try:
        ...     mem.runtime.add("memory", "Deploys go through CI.")
        ... except StorageError as exc:
        ...     exc.code   # 'storage-full' when the disk is full; every file is unchanged
    """

    code = "storage-error"

    @classmethod
    def from_os_error(cls, exc: OSError, action: str, path: object | None = None) -> StorageError:
        """The typed error for an ``OSError`` raised while trying to ``action`` (a verb phrase).

        Example:
            >>> StorageError.from_os_error(OSError(28, "No space left on device"),
            ...                            "write MEMORY.md", "/srv/.mnemon/runtime").code
            'storage-full'
        """
        code, advice = _OS_ERRORS.get(exc.errno or 0, ("storage-error", "check the file system"))
        where = f" ({path})" if path is not None else ""
        reason = exc.strerror or str(exc) or type(exc).__name__
        return cls(
            f"could not {action}{where}: {reason}; {advice}. Nothing was changed.", code=code
        )


class SecretKeyError(StorageError):
    """Stored provider secrets cannot be read with the configured key (``secret_key``).

    ``code`` is ``secret-key``. The message says which setting to fix: ``MNEMON_SECRET_KEY``
    missing while rows are encrypted, or a key other than the one they were written with (put
    the old one in ``MNEMON_SECRET_KEY_PREVIOUS`` and run ``mnemon secrets rotate``). Nothing
    was read or changed; the space is reported unavailable and the run goes on. The secret
    values never appear in the message.

    Example:
        >>> mem.spaces.search("deploys").sources[0].hint
        'unavailable: the provider secrets of Memory Space ... set MNEMON_SECRET_KEY ...'
    """

    code = "secret-key"


# errno -> (code, what the user can do); codes are part of the public contract.
_OS_ERRORS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("storage-full", "free disk space, then retry"),
    errno.EDQUOT: ("storage-full", "the disk quota is exhausted; free space or raise it"),
    errno.EFBIG: ("storage-full", "the file would exceed the file-size limit"),
    errno.EROFS: (
        "storage-read-only",
        "the file system is read-only; remount it read-write or set write_enabled=false",
    ),
    errno.EACCES: ("storage-permission", "check the owner and mode of the storage root"),
    errno.EPERM: ("storage-permission", "check the owner and mode of the storage root"),
    errno.ELOOP: (
        "symlink-refused",
        "a managed path is a symbolic link; replace it with a real folder or file",
    ),
    errno.EIO: ("storage-error", "the device reported an I/O error; check the disk"),
}


class ScopeMismatchError(AuthorityError):
    """A run names a user or scope it may not act for (another user than the authenticated one),
    or names two (its runtime context and its ``configurable`` give different ids).

    Nothing was read or written. Drop the named ``user_id`` (an authenticated run uses its own
    user) or authenticate as that user; name ``user_id`` / ``mnemon_project`` in one place.

    Example:
        >>> resolve_scope({"langgraph_auth_user_id": "a", "user_id": "b"}, ScopesConfig())
        Traceback (most recent call last):
        ScopeMismatchError: the run's user_id 'b' is not the authenticated user 'a'; ...
    """

    code = "scope-mismatch"


class ProjectNotGrantedError(ScopeMismatchError):
    """An authenticated run names a project its user is not granted.

    Nothing was read or written; the run goes on without memory. Whether the project exists is
    not said. Grant it in the auth layer (the permission ``mnemon:project:<id>``, or
    ``scopes.project_grants``), or drop ``mnemon_project`` to use the user's own memory.

    Example:
        >>> resolve_scope(
        ...     {"langgraph_auth_user_id": "bob", "mnemon_project": "alice-billing"}, ScopesConfig()
        ... )
        Traceback (most recent call last):
        ProjectNotGrantedError: user 'bob' is not granted the project 'alice-billing'; ...
    """

    code = "project-not-granted"
