"""Export and import of Documents: copy every record and body from one backend to another.

``mnemon export`` / ``mnemon import`` move Documents between the files under a root and the
database tables of an owner (either way, or between two owners). :func:`copy_documents` reads
the source's committed state (active and archived records in index order, each body verified
against its SHA-256) and writes it to the destination in one commit under its lock.

The copy is exact: the destination's ``index.json`` (or rows) and every rendered file are the
source's bytes. One thing cannot travel byte for byte: the file backend's ``access.jsonl``
journal. Its access times are folded into the copied records (the same fold the next commit
of the source would do), so a round trip files -> database -> files is byte-identical for a
source whose journal is folded (:func:`fold_access_times` folds it; any commit does too).

Example:
    >>> files = Documents("./.mnemon")
    >>> shared = Documents("./.mnemon", database=db, owner_key="project:local")
    >>> copy_documents(files, shared)
    12
    >>> copy_documents(shared, Documents("./restored"))
    12
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph_mnemon.errors import ConflictError, InvalidInputError
from langgraph_mnemon.memory_layers.documents._models import DocumentRecord
from langgraph_mnemon.memory_layers.documents._repair import load_for_write
from langgraph_mnemon.memory_layers.documents._service import Documents
from langgraph_mnemon.memory_layers.documents._sql_store import SqlDocumentStore, Store
from langgraph_mnemon.memory_layers.documents._state import State
from langgraph_mnemon.memory_layers.documents._validation import checked_bool

__all__ = ["copy_documents", "fold_access_times"]


def _where(docs: Documents) -> str:
    store = docs._store
    return store.where if isinstance(store, SqlDocumentStore) else str(store.directory)


def copy_documents(source: Documents, dest: Documents, *, replace: bool = False) -> int:
    """Copy every Document (active and archived, with its body) from ``source`` to ``dest``.

    Records keep their ids, revisions, timestamps, paths and order; access times recorded
    since the source's last commit are folded into them. Capacity limits are not applied: an
    import restores what the source held.

    Args:
        source: the Documents to read (files or database; a management read).
        dest: the Documents to write (files or database).
        replace: overwrite a destination that already holds Documents (they are removed).

    Returns:
        The number of Documents copied.

    Raises:
        InvalidInputError: not two different :class:`Documents`, or ``replace`` not a bool.
        ConflictError: ``dest`` is not empty and ``replace`` is false (nothing was written).
        ReadOnlyError: writes are switched off for ``dest``.
        StorageError: a source body is missing or damaged, or the destination refused the
            write (nothing was written).

    Example:
        >>> copy_documents(Documents("./.mnemon"), Documents("./.mnemon", database=db))
        12
    """
    if not isinstance(source, Documents) or not isinstance(dest, Documents):
        raise InvalidInputError("copy_documents() takes two Documents services")
    checked_bool(replace, "replace")
    if _where(source) == _where(dest):
        raise InvalidInputError(f"source and destination are the same Documents ({_where(dest)})")
    dest.kernel.require_writes("Documents import")
    state = source._store.load()
    records = tuple(state.merged(r) for r in state.records)
    bodies = [source._store.body_for(r) for r in records]  # verified, before any write
    store = dest._store
    with store.exclusive():
        current = load_for_write(store)
        if current.records and not replace:
            raise ConflictError(
                f"the destination already holds {len(current.records)} Document(s) "
                f"({_where(dest)}); pass replace=True to overwrite them, or import into an "
                "empty destination"
            )
        writes, removals = _writes(store, current, records, bodies)
        # The destination's own access times belong to what is replaced: do not fold them in.
        plain = State(current.records, current.generation, current.exists, {})
        store.commit(plain, records, writes=writes, removals=removals)
    return len(records)


def _writes(
    store: Store,
    current: State,
    records: tuple[DocumentRecord, ...],
    bodies: list[str],
) -> tuple[list[Any], list[Path]]:
    """The destination writes of ``records`` and the old files the commit makes obsolete."""
    old_paths = {store.path_of(r) for r in current.records}
    writes = [
        store.write_of(record, body, store.path_of(record) in old_paths)
        for record, body in zip(records, bodies, strict=True)
    ]
    new_paths = {store.path_of(r) for r in records}
    return writes, sorted(old_paths - new_paths)


def fold_access_times(docs: Documents) -> bool:
    """Fold recorded access times into the committed records (one commit; nothing else moves).

    The file backend keeps them in ``access.jsonl`` and the database in a column until the
    next commit; after this, ``index.json`` (or the record rows) hold them. Run it on a source
    before comparing a round trip byte for byte.

    Returns:
        True when there was something to fold.

    Raises:
        ReadOnlyError: writes are switched off.
        StorageError: the lock could not be had or the write was refused.

    Example:
        >>> docs.search("kafka")   # records an access
        >>> fold_access_times(docs)
        True
    """
    if not isinstance(docs, Documents):
        raise InvalidInputError("fold_access_times() takes a Documents service")
    docs.kernel.require_writes("Documents access times")
    store = docs._store
    with store.exclusive():
        state = load_for_write(store)
        if not state.access:
            return False
        store.commit(state, state.records)
    return True
