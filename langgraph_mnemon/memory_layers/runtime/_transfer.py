"""Copy Runtime Memory between backends: files to database tables and back (export / import).

:func:`export_runtime` copies the committed entries of both targets, in the order one
``memories.json`` keeps them, and the archived lines of each target, from one
:class:`~._service.RuntimeMemory` to another. It serves both directions (``mnemon export`` reads
a database into files, ``mnemon import`` the other way), and a round trip files -> database ->
files gives back every file under ``runtime/`` byte for byte: ``memories.json``, ``USER.md``,
``MEMORY.md`` and ``archived/*.jsonl``.

Example:
    >>> files = RuntimeMemory("./.mnemon")
    >>> shared = RuntimeMemory("./.mnemon", database=db)
    >>> export_runtime(files, shared)   # import: files -> database
    3
    >>> export_runtime(shared, RuntimeMemory("./backup"))   # export: database -> files
    3
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from langgraph_mnemon.errors import ConflictError, InvalidInputError, StorageError
from langgraph_mnemon.memory_layers.runtime._entries import TARGETS
from langgraph_mnemon.memory_layers.runtime._file_store import FileState, Row, RuntimeFile
from langgraph_mnemon.memory_layers.runtime._service import RuntimeMemory
from langgraph_mnemon.memory_layers.runtime._sql_store import RuntimeStore, RuntimeTable, install
from langgraph_mnemon.storage.files import atomic_write, ensure_dir, unlink_quietly

__all__ = ["export_runtime"]


def export_runtime(source: RuntimeMemory, dest: RuntimeMemory, *, replace: bool = False) -> int:
    """Copy every committed entry and archived line of ``source`` into ``dest``.

    Entries keep every stored field and their combined order (USER and MEMORY entries
    interleaved as they were added), so both sides then report the same :attr:`revision`.
    Limits are not applied: the copy is the state as it is. ``dest`` is written in one commit
    per store (one transaction on a database).

    Args:
        source: the Runtime Memory to read (files or database).
        dest: the Runtime Memory to write (files or database); writes must be enabled.
        replace: overwrite a ``dest`` that already holds entries or archived lines.

    Returns:
        How many entries were copied.

    Raises:
        InvalidInputError: ``source`` or ``dest`` is not a RuntimeMemory, or both are the same.
        ReadOnlyError: ``dest`` has writes switched off (nothing was read or written).
        ConflictError: ``dest`` already holds entries or archived lines and ``replace`` is
            false; nothing was written.
        StorageError: a store could not be read, locked or written (a database write is
            rolled back; a folder keeps its files as they were).

    Example:
        >>> export_runtime(RuntimeMemory("./.mnemon"), RuntimeMemory("./.mnemon", database=db))
        3
    """
    for name, value in (("source", source), ("dest", dest)):
        if not isinstance(value, RuntimeMemory):
            raise InvalidInputError(f"{name} must be a RuntimeMemory (got {type(value).__name__})")
    if source is dest:
        raise InvalidInputError("source and dest are the same RuntimeMemory; give two")
    dest.kernel.require_writes("import Runtime Memory")
    rows = source._composite_rows()  # the combined order of one memories.json
    archives = {t: source._files[t].read_archived(t) for t in TARGETS}
    if not replace:
        _refuse_filled(dest)
    stores = dest._distinct_files()
    if all(isinstance(s, RuntimeTable) for s in stores):
        _install_tables(dest, rows, archives)
    else:
        for store in stores:
            _write_folder(dest, store, rows, archives)
    return len(rows)


def _refuse_filled(dest: RuntimeMemory) -> None:
    held = len(dest._composite_rows())
    archived = [t for t in TARGETS if dest._files[t].read_archived(t)]
    if held or archived:
        where = "the database" if dest.storage == "database" else str(dest.root / "runtime")
        raise ConflictError(
            f"the destination ({where}) already holds {held} Runtime Memory entries"
            + (f" and archived {'/'.join(archived)} lines" if archived else "")
            + "; nothing was copied. Pass replace=True (mnemon import --replace) to overwrite it."
        )


def _owned(dest: RuntimeMemory, store: RuntimeStore, row: Row) -> bool:
    return dest._files[row.entry.target] is store


def _install_tables(
    dest: RuntimeMemory, rows: Sequence[Row], archives: dict[str, bytes | None]
) -> None:
    tables = [s for s in dest._distinct_files() if isinstance(s, RuntimeTable)]
    placed = []
    for row in rows:
        table = dest._files[row.entry.target]
        assert isinstance(table, RuntimeTable)
        placed.append((table, row))
    lines = {}
    for target, data in archives.items():
        if data:
            table = dest._files[target]
            assert isinstance(table, RuntimeTable)
            lines[(table.owner, f"{target}.jsonl")] = data
    install(tables, placed, lines)


def _write_folder(
    dest: RuntimeMemory,
    store: RuntimeStore,
    rows: Sequence[Row],
    archives: dict[str, bytes | None],
) -> None:
    """One commit of ``store``'s share, its archived files replaced whole (put back on failure)."""
    assert isinstance(store, RuntimeFile)
    targets = [t for t in TARGETS if dest._files[t] is store]
    state = FileState(tuple(r for r in rows if _owned(dest, store, r)))
    folder = store.directory / "archived"
    with store.lock():
        store.check_paths()
        before = {t: store.read_archived(t) for t in targets}
        try:
            for target in targets:
                _put_archive(folder, target, archives[target])
            store.commit(state, targets)
        except BaseException:
            with contextlib.suppress(StorageError):  # best effort: the first error is the news
                for target in targets:
                    _put_archive(folder, target, before[target])
            raise


def _put_archive(folder: Path, target: str, data: bytes | None) -> None:
    path = folder / f"{target}.jsonl"
    if data is None:
        unlink_quietly(path)
        return
    ensure_dir(folder)
    atomic_write(path, data)
