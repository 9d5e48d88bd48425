"""The Runtime Memory file store: ``runtime/memories.json`` and its Markdown projections.

``memories.json`` is the only authority; ``USER.md`` and ``MEMORY.md`` are projections of it
(:func:`~._entries.render_projection`) rewritten from the authority whenever they differ. A
commit writes the projections, then the authority (the commit marker), under a cross-process
lock; a failed commit puts every file back as it was. Reads are cached while the authority is
the same inode, mtime and size.

Example:
    >>> file = RuntimeFile(Path(".mnemon/runtime"), lock_timeout=10.0)
    >>> with file.lock():
    ...     state = file.read()
    ...     file.commit(replace_target(state, "user", [entry]), ["user"])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from langgraph_mnemon.errors import InvalidInputError, StorageError
from langgraph_mnemon.memory_layers.runtime._entries import (
    DELIMITER_BYTES,
    FILE_NAMES,
    TARGETS,
    entry_from_json,
    render_projection,
)
from langgraph_mnemon.memory_layers.runtime._models import RuntimeEntry
from langgraph_mnemon.storage.files import (
    NOFOLLOW,
    append_durable,
    atomic_write,
    discard,
    ensure_dir,
    ensure_dir_below,
    fsync_dir,
    has_stale_temps,
    io_errors,
    locked,
    read_bytes,
    refuse_symlink,
    refuse_symlinks,
    remove_stale_temps,
    tolerate_unwritable,
    undo_append,
    write_temp,
)

__all__ = [
    "EMPTY",
    "FileState",
    "Row",
    "RuntimeFile",
    "change_entry",
    "replace_target",
    "revision_of",
]

_VERSION = 1
_log = logging.getLogger(__name__)


# --- entries as they sit in the file ---------------------------------------------------------


class Row(NamedTuple):
    """An entry with its JSON renderings and size, computed once per entry object."""

    entry: RuntimeEntry
    pretty: str  # the entry as it sits in the 2-space-indented file
    compact: str  # the entry in the compact form hashed for the revision
    size: int  # UTF-8 bytes of the content
    key: tuple[Any, ...]  # every stored field, to recognise the entry in a re-read file


def _row(entry: RuntimeEntry) -> Row:
    data = entry.to_json()
    # The C encoder only serves scalar dumps; indent= would fall back to the slow Python one.
    fields = []
    for key, value in data.items():
        if isinstance(value, list):
            items = ",\n".join(f"        {json.dumps(v, ensure_ascii=False)}" for v in value)
            fields.append(f'      "{key}": [\n{items}\n      ]')
        else:
            fields.append(f'      "{key}": {json.dumps(value, ensure_ascii=False)}')
    pretty = "    {\n" + ",\n".join(fields) + "\n    }"
    compact = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Row(entry, pretty, compact, len(entry.content.encode()), _raw_key(data))


def _raw_key(item: dict[str, Any]) -> tuple[Any, ...]:
    branches = item.get("branches")
    return (
        item.get("content"),
        item.get("created_at"),
        item.get("updated_at"),
        item.get("target"),
        item.get("importance", "normal"),
        tuple(branches) if isinstance(branches, list) else branches,
        len(item),
    )


def revision_of(rows: Iterable[Row]) -> str:
    """SHA-256 of the compact JSON of ``rows``: changes iff the committed state changes."""
    body = f'{{"version":{_VERSION},"entries":[{",".join(r.compact for r in rows)}]}}'
    return hashlib.sha256(body.encode()).hexdigest()


class FileState:
    """One file's committed entries, in file order."""

    __slots__ = ("_bytes", "entries", "rows")

    def __init__(self, rows: tuple[Row, ...]) -> None:
        self.rows = rows
        self.entries = tuple(r.entry for r in rows)
        self._bytes: dict[str, int] = {}

    @classmethod
    def derive(cls, base: FileState, entries: Iterable[RuntimeEntry]) -> FileState:
        """A new state, reusing the renderings of entries carried over from ``base``."""
        known = {id(r.entry): r for r in base.rows}
        return cls(tuple(known.get(id(e)) or _row(e) for e in entries))

    def of(self, target: str) -> list[RuntimeEntry]:
        return [e for e in self.entries if e.target == target]

    def rows_of(self, target: str) -> list[Row]:
        return [r for r in self.rows if r.entry.target == target]

    def target_bytes(self, target: str) -> int:
        """UTF-8 bytes of one target's projection body (cached per state)."""
        cached = self._bytes.get(target)
        if cached is None:
            sizes = [r.size for r in self.rows if r.entry.target == target]
            cached = self._bytes[target] = sum(sizes) + DELIMITER_BYTES * max(len(sizes) - 1, 0)
        return cached

    def to_json_bytes(self) -> bytes:
        if not self.rows:
            return b'{\n  "version": 1,\n  "entries": []\n}\n'
        body = ",\n".join(r.pretty for r in self.rows)
        return f'{{\n  "version": {_VERSION},\n  "entries": [\n{body}\n  ]\n}}\n'.encode()


EMPTY = FileState(())


def replace_target(state: FileState, target: str, entries: list[RuntimeEntry]) -> FileState:
    """Swap one target's entries wholesale, keeping the other target's entries."""
    return FileState.derive(state, (*(e for e in state.entries if e.target != target), *entries))


def change_entry(state: FileState, old: RuntimeEntry | None, new: RuntimeEntry | None) -> FileState:
    """Add (``old`` None), remove (``new`` None) or replace one entry, keeping the rest in place."""
    if old is None:  # add
        assert new is not None
        return FileState((*state.rows, _row(new)))
    if new is None:  # remove
        return FileState(tuple(r for r in state.rows if r.entry is not old))
    row = _row(new)
    return FileState(tuple(row if r.entry is old else r for r in state.rows))


def _damaged(message: str) -> StorageError:
    return StorageError(message, code="storage-damaged")


def parse_state(raw: bytes, where: str, known: dict[tuple[Any, ...], Row]) -> FileState:
    """The state stored in ``raw``; ``known`` rows (by stored fields) are reused unchecked.

    Raises:
        StorageError: ``storage-damaged`` for unreadable JSON, a wrong version or a bad entry.
    """
    try:
        data = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _damaged(
            f"runtime memories.json is unreadable: {where}: {exc}. Restore it from a "
            "backup or fix it by hand; mnemon will not overwrite it."
        ) from None
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        raise _damaged(
            f"runtime memories.json must use version {_VERSION}: {where}. "
            "mnemon will not overwrite it."
        )
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        raise _damaged(
            f"runtime memories.json contains an invalid entry list: {where}. "
            "mnemon will not overwrite it."
        )
    return FileState(
        tuple(_parsed_row(item, i, where, known) for i, item in enumerate(raw_entries))
    )


def _parsed_row(item: Any, index: int, where: str, known: dict[tuple[Any, ...], Row]) -> Row:
    try:
        row = known.get(_raw_key(item)) if isinstance(item, dict) else None
    except TypeError:  # an unhashable value: let validation explain it
        row = None
    if row is not None:
        return row
    try:
        return _row(entry_from_json(item))
    except (InvalidInputError, ValueError, TypeError) as exc:
        raise _damaged(
            f"runtime memories.json contains an invalid entry (#{index + 1}: {exc}): "
            f"{where}. Fix or remove that entry; mnemon will not overwrite the file."
        ) from None


# --- the folder ------------------------------------------------------------------------------


class RuntimeFile:
    """``<dir>/memories.json`` plus its USER.md / MEMORY.md projections and lock.

    With ``create_below`` (a scope's folder below the storage root) the folder is made by the
    first write only, below that root and never through a link; until then it reads as empty
    and :meth:`repair` creates nothing. Without it (the local scope), :meth:`repair` on open
    creates the folder and its empty files.
    """

    def __init__(
        self, directory: Path, lock_timeout: float, create_below: Path | None = None
    ) -> None:
        self.directory = directory
        self.create_below = create_below
        self.authority = directory / "memories.json"
        self.lock_path = directory / ".memories.lock"
        self.lock_timeout = lock_timeout
        self._cache: tuple[tuple[int, int, int, int], FileState] | None = None

    def projection_path(self, target: str) -> Path:
        return self.directory / FILE_NAMES[target]

    @property
    def absent(self) -> bool:
        """A scope's folder (``create_below``) that no write has created yet: it reads as empty
        and nothing is created until a write commits."""
        return self.create_below is not None and not os.path.lexists(self.directory)

    def check_paths(self) -> None:
        """Refuse (``symlink-refused``) when any managed path here is a symbolic link."""
        refuse_symlinks(self._managed)

    @cached_property
    def _managed(self) -> tuple[tuple[Path, str], ...]:
        # Built once: this runs before every commit, where path building cost more than lstat.
        archived = self.directory / "archived"
        return (
            (self.directory, "runtime folder"),
            (self.authority, "runtime memories.json"),
            *((self.projection_path(t), f"runtime {FILE_NAMES[t]}") for t in TARGETS),
            (self.lock_path, "runtime lock file"),
            (archived, "runtime archived folder"),
            *((archived / f"{t}.jsonl", f"runtime archived/{t}.jsonl") for t in TARGETS),
        )

    def lock(self) -> Any:
        """The cross-process lock of this folder (a context manager)."""
        refuse_symlink(self.directory, "runtime folder")  # else the lock would land in its target
        if self.create_below is None:
            ensure_dir(self.directory)
        else:
            ensure_dir_below(self.create_below, self.directory)
        return locked(self.lock_path, timeout=self.lock_timeout, what="runtime memory")

    # -- reading -----------------------------------------------------------------------------

    def read(self) -> FileState:
        """The committed state; cached while the authority file is the same inode and size."""
        try:
            fd = os.open(self.authority, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            return EMPTY
        except OSError as exc:
            raise StorageError.from_os_error(
                exc, "read runtime memories.json", self.authority
            ) from exc
        try:
            with io_errors("read runtime memories.json", self.authority):
                st = os.fstat(fd)
                key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
                if self._cache is not None and self._cache[0] == key:
                    return self._cache[1]
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    raw = fh.read()
        finally:
            os.close(fd)
        # Another process usually changed one entry: reuse what the last read already checked.
        known = {r.key: r for r in self._cache[1].rows} if self._cache else {}
        state = parse_state(raw, str(self.authority), known)
        self._cache = (key, state)
        return state

    def read_archived(self, target: str) -> bytes | None:
        """The raw ``archived/<target>.jsonl`` (None when absent)."""
        path = self.directory / "archived" / f"{target}.jsonl"
        return read_bytes(path, f"runtime archived/{target}.jsonl")

    # -- committing --------------------------------------------------------------------------

    def commit(
        self,
        state: FileState,
        targets: Iterable[str],
        archive: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        """Write projections for ``targets`` then the authority (the commit marker). Hold the lock.

        Only the authority is fsynced (then the directory): projections are derived and are
        rewritten from the authority on open if a power loss left them stale, so syncing them
        would double the cost of a commit without protecting any data.

        ``archive`` lines are appended to ``archived/<name>`` before anything else, so a crash
        can leave an archived entry that is also still hot (a safe duplicate), never a lost one.

        A failure before the authority rename (a full or read-only disk, a refused link) raises
        :class:`StorageError` after undoing everything: temp files removed, archive appends cut
        back, projections already renamed rewritten from the unchanged authority.
        """
        self.check_paths()
        folder = self.directory / "archived"
        new_folder = folder if archive and not os.path.lexists(folder) else None
        appended: list[tuple[Path, int | None]] = []
        temps: list[tuple[Path, Path, str | None]] = []
        renamed: list[str] = []
        try:
            for name, line in archive:
                ensure_dir(folder)
                appended.append((folder / name, append_durable(folder / name, line)))
            self._write_temps(state, targets, temps)
            for tmp, path, target in temps:
                with io_errors(f"replace {path.name}", path):
                    os.replace(tmp, path)
                if target is not None:
                    renamed.append(target)
        except BaseException:
            self._undo([t for t, _, _ in temps], appended, renamed, new_folder)
            raise
        self._synced(state)

    def _write_temps(
        self, state: FileState, targets: Iterable[str], temps: list[tuple[Path, Path, str | None]]
    ) -> None:
        """Temp files of the projections (not fsynced) and of the authority, in rename order.

        Appended to ``temps`` one by one, so a failure half-way leaves the caller the list of
        temp files to discard.
        """
        for target in targets:
            path = self.projection_path(target)
            body = render_projection([e.content for e in state.of(target)]).encode()
            temps.append((write_temp(path, body, fsync=False), path, target))
        temps.append((write_temp(self.authority, state.to_json_bytes()), self.authority, None))

    def _synced(self, state: FileState) -> None:
        """Sync the folder after the authority rename and cache ``state`` under its new stat."""
        try:
            fsync_dir(self.directory)
            st = os.stat(self.authority)
        except (OSError, StorageError) as exc:
            # The authority is renamed: the write is visible, so it is not reported as failed.
            _log.warning("runtime memory committed but not synced (%s): %s", self.directory, exc)
            self._cache = None
            return
        self._cache = ((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size), state)

    def _undo(
        self,
        temps: list[Path],
        appended: list[tuple[Path, int | None]],
        renamed: list[str],
        new_folder: Path | None,
    ) -> None:
        """Best effort: put every file back as it was before a failed :meth:`commit`."""
        for tmp in temps:
            discard(tmp)
        for path, before in appended:
            undo_append(path, before)
        if new_folder is not None:
            with contextlib.suppress(OSError):
                new_folder.rmdir()
        try:
            old = self.read()  # the authority was not renamed: still the committed state
            for target in renamed:
                body = render_projection([e.content for e in old.of(target)]).encode()
                atomic_write(self.projection_path(target), body, fsync=False)
        except StorageError as exc:
            _log.warning("runtime projections left for repair (%s): %s", self.directory, exc)

    # -- repair ------------------------------------------------------------------------------

    def stale_projections(self, state: FileState) -> list[str]:
        """Targets whose projection file differs from ``state``."""
        stale = []
        for target in TARGETS:
            want = render_projection([e.content for e in state.of(target)]).encode()
            name = FILE_NAMES[target]
            have = read_bytes(self.projection_path(target), f"runtime {name} projection")
            if have != want:
                stale.append(target)
        return stale

    def repair(self) -> list[str]:
        """Rewrite projections that differ from the authority; returns the repaired targets.

        Nothing is written when nothing needs repair. When the disk refuses the repair (full,
        read-only, no permission) it is logged and skipped: reads answer from the authority.
        A scope's folder that does not exist yet (``create_below``) needs no repair: nothing is
        created until the first write.
        """
        if self.absent:
            return []
        if (
            self.authority.exists()
            and not self.stale_projections(self.read())
            and not has_stale_temps(self.directory)
        ):
            return []
        what = f"repair of runtime memory files in {self.directory}"
        with tolerate_unwritable(what), self.lock():
            remove_stale_temps(self.directory)
            state = self.read()
            stale = self.stale_projections(state)
            if stale or not self.authority.exists():
                self.commit(state, stale)
            return stale
        return []
