"""Runtime Memory (tier 1): USER.md and MEMORY.md, the hot memory the model sees every turn.

``runtime/memories.json`` is the only authority; ``USER.md`` and ``MEMORY.md`` are projections of
it (entries of one target joined by ``"\\n§\\n"`` plus a trailing newline) that are rewritten from
the authority whenever they differ. Capacity is counted in UTF-8 bytes of the projection body,
delimiters included. A mutation that would overflow raises :class:`CapacityError` carrying a
:class:`MaintenancePlan` and changes nothing on disk.

Every operation asks the kernel before any I/O: add / replace / remove / apply ask ``runtime``
``write``; the maintenance primitives (``plan_maintenance``, ``compact_and_mutate``,
``compact_target``) ask ``runtime`` ``maintenance`` (and ``write`` for the pending mutation);
:meth:`RuntimeMemory.search` (current and ``runtime/archived/`` entries) asks ``runtime``
``recall``. Entries, usage, revision, the archive listing and the snapshot are management reads.

Example:
    >>> rm = RuntimeMemory("./.mnemon")
    >>> rm.add("user", "Prefers answers in British English.").message
    'Entry added.'
    >>> rm.replace("user", "British English", "Prefers answers in Australian English.").message
    'Entry replaced.'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from langgraph_mnemon.contracts import Importance, Usage, check_text
from langgraph_mnemon.errors import (
    AmbiguousMatchError,
    CapacityError,
    ConflictError,
    InvalidInputError,
    NoMatchError,
    StorageError,
)
from langgraph_mnemon.memory_layers.kernel import Kernel
from langgraph_mnemon.memory_layers.runtime._models import (
    CompactedEntry,
    MaintenancePlan,
    PendingEntry,
    RuntimeEntry,
    RuntimeMutation,
    RuntimeReceipt,
    RuntimeSnapshot,
    RuntimeTarget,
)
from langgraph_mnemon.memory_layers.runtime._protocol import RUNTIME_MEMORY_PROTOCOL
from langgraph_mnemon.memory_layers.runtime._search import (
    RuntimeMatch,
    check_query,
    search_entries,
)
from langgraph_mnemon.storage.files import (
    append_durable,
    atomic_write,
    checked_path,
    discard,
    ensure_dir,
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
from langgraph_mnemon.storage.git import current_branch

__all__ = [
    "DELIMITER",
    "MAX_ENTRY_BYTES",
    "RUNTIME_MEMORY_PROTOCOL",
    "CompactedEntry",
    "MaintenancePlan",
    "PendingEntry",
    "RuntimeEntry",
    "RuntimeMatch",
    "RuntimeMemory",
    "RuntimeMutation",
    "RuntimeReceipt",
    "RuntimeSnapshot",
    "RuntimeTarget",
    "compaction_budget",
    "current_git_branch",
    "normalize_content",
    "validate_branches",
]

DELIMITER = "\n§\n"
DELIMITER_BYTES = len(DELIMITER.encode())  # 4: "§" is two bytes in UTF-8
MAX_ENTRY_BYTES = 8192
MAX_BRANCHES = 16
MAX_BRANCH_CHARS = 128
_VERSION = 1
_TARGETS = ("user", "memory")
_IMPORTANCE_RANK = {"critical": 0, "normal": 1, "low": 2}
_FILE_NAMES = {"user": "USER.md", "memory": "MEMORY.md"}
_WHITESPACE = re.compile(r"[\s\ufeff]+")
_BRANCH_CHARS = re.compile(r"^[A-Za-z0-9._/-]+$")
_MAX_RAW_CHARS = 64 * MAX_ENTRY_BYTES  # longer input cannot collapse to a storable entry
_log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Validation and pure helpers


def normalize_content(value: Any, field: str = "content") -> str:
    """Trim and collapse whitespace; reject what cannot be stored.

    NUL characters are refused, not stripped (they would sit in USER.md / MEMORY.md and in
    every prompt), as are lone surrogates, the ``§`` delimiter and more than
    :data:`MAX_ENTRY_BYTES`. Raises :class:`InvalidInputError` with the reference messages.
    """
    value = check_text(value, field)
    if len(value) > _MAX_RAW_CHARS:
        raise InvalidInputError(
            f"{field} is too large ({len(value)} characters; max {MAX_ENTRY_BYTES} bytes)"
        )
    text = _WHITESPACE.sub(" ", value).strip()
    if not text:
        raise InvalidInputError(f"{field} is required")
    if "§" in text:
        raise InvalidInputError(f"{field} must not contain the reserved § entry delimiter")
    size = len(text.encode())
    if size > MAX_ENTRY_BYTES:
        raise InvalidInputError(f"{field} is too large ({size} bytes; max {MAX_ENTRY_BYTES})")
    return text


def validate_target(value: Any) -> RuntimeTarget:
    if not isinstance(value, str) or value not in _TARGETS:
        raise InvalidInputError("target must be memory or user")
    return value  # type: ignore[no-any-return]


def validate_importance(value: Any) -> Importance:
    if not isinstance(value, str) or value not in _IMPORTANCE_RANK:
        raise InvalidInputError("importance must be critical, normal, or low")
    return value  # type: ignore[no-any-return]


def validate_branches(value: Any) -> tuple[str, ...] | None:
    """Validate git branch names for a MEMORY entry; ``[]`` / ``None`` mean unscoped."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError("branches must be a list of branch names")
    names = list(value)
    if not names:
        return None
    if len(names) > MAX_BRANCHES:
        raise InvalidInputError(f"branches accepts at most {MAX_BRANCHES} names")
    seen: set[str] = set()
    for name in names:
        problem = _branch_problem(name)
        if problem:
            raise InvalidInputError(f"invalid branch name {name!r}: {problem}")
        if name in seen:
            raise InvalidInputError(f"branch {name!r} is listed twice")
        seen.add(name)
    return tuple(names)


def _branch_problem(name: Any) -> str | None:
    if not isinstance(name, str):
        return "must be a string"
    if not name:
        return "must not be empty"
    if len(name) > MAX_BRANCH_CHARS:
        return f"longer than {MAX_BRANCH_CHARS} characters"
    if not _BRANCH_CHARS.match(name):
        return "only letters, digits, '.', '_', '/' and '-' are allowed"
    if name[0] in "/-":
        return "must not start with '/' or '-'"
    if name[-1] in "/.":
        return "must not end with '/' or '.'"
    for bad in ("..", "//", "@{"):
        if bad in name:
            return f"must not contain {bad!r}"
    return None


def entry_bytes(content: str) -> int:
    return len(content.encode())


def joined_bytes(contents: Iterable[str]) -> int:
    """UTF-8 bytes of ``contents`` joined by the 4-byte delimiter."""
    total = count = 0
    for content in contents:
        total += entry_bytes(content)
        count += 1
    return total + DELIMITER_BYTES * max(count - 1, 0)


def render_projection(contents: Sequence[str]) -> str:
    return DELIMITER.join(contents) + "\n" if contents else ""


def compaction_budget(limit: int, pending_bytes: int = 0) -> int:
    """Byte budget for compacted entries: ``floor(0.7 × limit) − pending − 4``.

    The delimiter is only reserved when there is a pending entry to join.
    """
    reserve = pending_bytes + DELIMITER_BYTES if pending_bytes else 0
    return max(math.floor(limit * 0.7) - reserve, 0)


def current_git_branch(workspace: Path | str | None) -> str | None:
    """The checked-out branch of the git work tree containing ``workspace`` (see storage.git)."""
    return current_branch(workspace)


def _now_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{moment.microsecond // 1000:03d}Z"
    )


def _age(stamp: str, now: datetime) -> str:
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "unknown"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "future"
    return f"{int(seconds // 86400)}d"


def _visible(entry: RuntimeEntry, branch: str | None) -> bool:
    if entry.target == "user" or branch is None or not entry.branches:
        return True
    return branch in entry.branches


# --------------------------------------------------------------------------------------------
# One memories.json file and its projections


class _Row(NamedTuple):
    """An entry with its JSON renderings and size, computed once per entry object."""

    entry: RuntimeEntry
    pretty: str  # the entry as it sits in the 2-space-indented file
    compact: str  # the entry in the compact form hashed for the revision
    size: int  # UTF-8 bytes of the content
    key: tuple[Any, ...]  # every stored field, to recognise the entry in a re-read file


def _row(entry: RuntimeEntry) -> _Row:
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
    key = _raw_key(data)
    return _Row(entry, pretty, compact, len(entry.content.encode()), key)


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


def _revision_of(rows: Iterable[_Row]) -> str:
    body = f'{{"version":{_VERSION},"entries":[{",".join(r.compact for r in rows)}]}}'
    return hashlib.sha256(body.encode()).hexdigest()


class _State:
    """One file's committed entries, in file order."""

    __slots__ = ("_bytes", "entries", "rows")

    def __init__(self, rows: tuple[_Row, ...]) -> None:
        self.rows = rows
        self.entries = tuple(r.entry for r in rows)
        self._bytes: dict[str, int] = {}

    @classmethod
    def derive(cls, base: _State, entries: Iterable[RuntimeEntry]) -> _State:
        """A new state, reusing the renderings of entries carried over from ``base``."""
        known = {id(r.entry): r for r in base.rows}
        return cls(tuple(known.get(id(e)) or _row(e) for e in entries))

    def of(self, target: str) -> list[RuntimeEntry]:
        return [e for e in self.entries if e.target == target]

    def rows_of(self, target: str) -> list[_Row]:
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


_EMPTY = _State(())


class _RuntimeFile:
    """``<dir>/memories.json`` plus its USER.md / MEMORY.md projections and lock."""

    def __init__(self, directory: Path, lock_timeout: float) -> None:
        self.directory = directory
        self.authority = directory / "memories.json"
        self.lock_path = directory / ".memories.lock"
        self.lock_timeout = lock_timeout
        self._cache: tuple[tuple[int, int, int, int], _State] | None = None

    def projection_path(self, target: str) -> Path:
        return self.directory / _FILE_NAMES[target]

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
            *((self.projection_path(t), f"runtime {_FILE_NAMES[t]}") for t in _TARGETS),
            (self.lock_path, "runtime lock file"),
            (archived, "runtime archived folder"),
            *((archived / f"{t}.jsonl", f"runtime archived/{t}.jsonl") for t in _TARGETS),
        )

    def lock(self) -> Any:
        refuse_symlink(self.directory, "runtime folder")  # else the lock would land in its target
        ensure_dir(self.directory)
        return locked(self.lock_path, timeout=self.lock_timeout, what="runtime memory")

    def read(self) -> _State:
        """The committed state; cached while the authority file is the same inode and size."""
        try:
            fd = os.open(self.authority, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return _EMPTY
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
        state = self._parse(raw)
        self._cache = (key, state)
        return state

    def _parse(self, raw: bytes) -> _State:
        where = str(self.authority)
        try:
            data = json.loads(raw.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StorageError(
                f"runtime memories.json is unreadable: {where}: {exc}. Restore it from a "
                "backup or fix it by hand; mnemon will not overwrite it.",
                code="storage-damaged",
            ) from None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise StorageError(
                f"runtime memories.json must use version {_VERSION}: {where}. "
                "mnemon will not overwrite it.",
                code="storage-damaged",
            )
        raw_entries = data.get("entries")
        if not isinstance(raw_entries, list):
            raise StorageError(
                f"runtime memories.json contains an invalid entry list: {where}. "
                "mnemon will not overwrite it.",
                code="storage-damaged",
            )
        # Another process usually changed one entry: reuse what the last read already checked.
        known = {r.key: r for r in self._cache[1].rows} if self._cache else {}
        rows = []
        for index, item in enumerate(raw_entries):
            try:
                row = known.get(_raw_key(item)) if isinstance(item, dict) else None
            except TypeError:  # an unhashable value: let validation explain it
                row = None
            if row is None:
                try:
                    row = _row(_entry_from_json(item))
                except (InvalidInputError, ValueError, TypeError) as exc:
                    raise StorageError(
                        f"runtime memories.json contains an invalid entry (#{index + 1}: {exc}): "
                        f"{where}. Fix or remove that entry; mnemon will not overwrite the file.",
                        code="storage-damaged",
                    ) from None
            rows.append(row)
        return _State(tuple(rows))

    def commit(
        self,
        state: _State,
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
            for target in targets:
                path = self.projection_path(target)
                body = render_projection([e.content for e in state.of(target)]).encode()
                temps.append((write_temp(path, body, fsync=False), path, target))
            temps.append((write_temp(self.authority, state.to_json_bytes()), self.authority, None))
            for tmp, path, target in temps:
                with io_errors(f"replace {path.name}", path):
                    os.replace(tmp, path)
                if target is not None:
                    renamed.append(target)
        except BaseException:
            self._undo([t for t, _, _ in temps], appended, renamed, new_folder)
            raise
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

    def stale_projections(self, state: _State) -> list[str]:
        stale = []
        for target in _TARGETS:
            want = render_projection([e.content for e in state.of(target)]).encode()
            name = _FILE_NAMES[target]
            have = read_bytes(self.projection_path(target), f"runtime {name} projection")
            if have != want:
                stale.append(target)
        return stale

    def repair(self) -> list[str]:
        """Rewrite projections that differ from the authority; returns the repaired targets.

        Nothing is written when nothing needs repair. When the disk refuses the repair (full,
        read-only, no permission) it is logged and skipped: reads answer from the authority.
        """
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

    def read_archived(self, target: str) -> bytes | None:
        path = self.directory / "archived" / f"{target}.jsonl"
        return read_bytes(path, f"runtime archived/{target}.jsonl")


def _entry_from_json(item: Any) -> RuntimeEntry:
    if not isinstance(item, dict):
        raise InvalidInputError("not an object")
    target = validate_target(item.get("target"))
    content = item.get("content")
    if isinstance(content, str) and "\x00" in content:
        # Older builds accepted NUL: read such an entry without it (projections are repaired
        # and the next commit rewrites the authority clean).
        content = normalize_content(content.replace("\x00", ""))
    elif normalize_content(content) != content:
        raise InvalidInputError("content is not whitespace-normalised")
    importance = validate_importance(item.get("importance", "normal"))
    for key in ("created_at", "updated_at"):
        if not isinstance(item.get(key), str):
            raise InvalidInputError(f"{key} must be a string")
    branches = None
    if "branches" in item:
        if target == "user":
            raise InvalidInputError("branches applies to target=memory only")
        branches = validate_branches(item["branches"])
        if branches is None:
            raise InvalidInputError("branches must list 1 to 16 names when present")
    # Every field was checked above; skip a second validation pass on each load.
    return RuntimeEntry.model_construct(
        content=content,
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        target=target,
        importance=importance,
        branches=branches,
    )


# --------------------------------------------------------------------------------------------
# The service


@dataclass(frozen=True, slots=True)
class _Applied:
    """The outcome of applying a mutation to one target's entries, before any I/O."""

    entries: list[RuntimeEntry]
    changed: bool
    message: str
    excluded: RuntimeEntry | None
    pending: PendingEntry | None
    receipt_fields: dict[str, Any]
    new_entry: RuntimeEntry | None = None


class RuntimeMemory:
    """Runtime Memory service over ``<root>/runtime/``.

    Args:
        root: storage root; files live in ``<root>/runtime/``.
        user_root: with ``runtime_user_scope=global``, the root whose ``runtime/memories.json``
            holds USER entries (MEMORY stays under ``root``). ``None`` keeps both under ``root``.
        user_limit_bytes / memory_limit_bytes: capacity of USER.md / MEMORY.md bodies.
        workspace: folder whose git branch scopes MEMORY entries in snapshots.
        lock_timeout: seconds to wait for the cross-process lock.
        clock: returns the current time (injectable for tests).
        write_enabled: ``False`` rejects every mutation with :class:`ReadOnlyError` and writes
            nothing at all (not even projection repairs). Ignored when ``kernel`` is given.
        kernel: the host's :class:`Kernel`; every write (``runtime`` ``write``), maintenance
            commit (``runtime`` ``maintenance``) and :meth:`search` (``runtime`` ``recall``)
            asks it before any I/O. Reads of entries, usage and the archive never ask.

    Opening repairs projections that differ from the authority and removes temp files left by
    writers that died; a corrupt authority raises :class:`StorageError` and is left untouched.
    On a full or read-only disk a needed repair is logged and skipped and reads answer from the
    authority. A managed path under ``runtime/`` that is a symbolic link is refused
    (``StorageError``, code ``symlink-refused``); the roots themselves are the caller's to name.
    Every I/O failure raises :class:`StorageError` and leaves every file byte-identical.
    """

    @property
    def write_enabled(self) -> bool:
        """Whether writes are on (the kernel's ``write_enabled``)."""
        return self.kernel.write_enabled

    def __init__(
        self,
        root: Path | str,
        *,
        user_root: Path | str | None = None,
        user_limit_bytes: int = 4096,
        memory_limit_bytes: int = 10240,
        workspace: Path | str | None = None,
        lock_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
        write_enabled: bool = True,
        kernel: Kernel | None = None,
    ) -> None:
        for name, value in (
            ("user_limit_bytes", user_limit_bytes),
            ("memory_limit_bytes", memory_limit_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_048_576:
                raise InvalidInputError(f"{name} must be an integer in 1..1048576 (got {value!r})")
        self.root = checked_path(root, "root")
        self.workspace = checked_path(workspace, "workspace") if workspace else None
        self._limits = {"user": user_limit_bytes, "memory": memory_limit_bytes}
        self._clock = clock or (lambda: datetime.now(UTC))
        # Every operation asks the kernel; a layer built alone gets one of its own.
        self.kernel = kernel or Kernel.standalone(write_enabled=bool(write_enabled))
        memory_file = _RuntimeFile(self.root / "runtime", lock_timeout)
        user_file = memory_file
        if user_root is not None:
            user_dir = checked_path(user_root, "user_root") / "runtime"
            if user_dir != memory_file.directory:
                user_file = _RuntimeFile(user_dir, lock_timeout)
        self._files: dict[str, _RuntimeFile] = {
            "user": user_file,
            "memory": memory_file,
        }
        for file in {id(f): f for f in self._files.values()}.values():
            file.check_paths()
        self._repair()

    def _repair(self) -> None:
        for file in {id(f): f for f in self._files.values()}.values():
            if self.write_enabled:
                file.repair()
            else:
                file.read()  # still report a corrupt authority

    # -- reads -------------------------------------------------------------------------------

    def limit(self, target: RuntimeTarget) -> int:
        return self._limits[validate_target(target)]

    def entries(self, target: RuntimeTarget | None = None) -> list[RuntimeEntry]:
        """Committed entries (all targets, or one), in insertion order."""
        if target is None:
            return self._composite()
        target = validate_target(target)
        return self._files[target].read().of(target)

    @property
    def revision(self) -> str:
        """SHA-256 of the committed state; changes iff the state changes."""
        return _revision_of(self._composite_rows())

    def usage(self, target: RuntimeTarget) -> Usage:
        target = validate_target(target)
        return Usage(
            used=joined_bytes(e.content for e in self.entries(target)),
            limit=self._limits[target],
        )

    def archived(self, target: RuntimeTarget) -> list[dict[str, Any]]:
        """Entries moved to ``runtime/archived/`` by compaction with no other destination."""
        target = validate_target(target)
        data = self._files[target].read_archived(target)
        records = []
        for line in (data or b"").splitlines():
            try:
                records.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # a torn line from a writer killed mid-append
        return records

    def search(
        self, query: str, *, target: RuntimeTarget | None = None, limit: int = 10
    ) -> list[RuntimeMatch]:
        """Find entries of USER.md / MEMORY.md and of ``runtime/archived/`` by shared words.

        Local only (never a Memory Space). Deterministic: the score is the share of the
        query's words (case, width and accents folded) an entry contains.

        Args:
            query: words to look for. target: ``"user"``, ``"memory"`` or None (both).
            limit: at most this many matches (1..50), best first.

        Returns:
            :class:`RuntimeMatch` rows; ``archived=True`` for entries no longer in hot memory.

        Raises:
            ParticipationError: the ``runtime`` ``recall`` channel refuses (nothing was read).
            InvalidInputError: a bad query, target or limit.

        Example:
            >>> [m.content for m in rm.search("lisbon", target="user")]
            ['I work from Lisbon.']
        """
        targets = _TARGETS if target is None else (validate_target(target),)
        words, limit = check_query(query, limit)
        self.kernel.admit("runtime", "recall")
        current = [e for t in targets for e in self.entries(t)]  # type: ignore[arg-type]
        archived = {t: self.archived(t) for t in targets}  # type: ignore[arg-type]
        return search_entries(words, current, archived, limit)

    def snapshot(
        self, branch: str | None = None, *, now: datetime | None = None
    ) -> RuntimeSnapshot:
        """Render the model-facing snapshot (repairs stale projections first).

        ``branch`` defaults to the workspace's current git branch; MEMORY entries scoped to
        other branches are hidden. ``now`` is the capture time for the age annotations (a naive
        datetime counts as UTC). A wrong type raises :class:`InvalidInputError`.
        """
        if branch is not None and len(check_text(branch, "branch")) > MAX_BRANCH_CHARS:
            raise InvalidInputError(f"branch is longer than {MAX_BRANCH_CHARS} characters")
        if now is not None and not isinstance(now, datetime):
            raise InvalidInputError(f"now must be a datetime (got {type(now).__name__})")
        self._repair()
        moment = now or self._clock()
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if branch is None:
            branch = current_git_branch(self.workspace)
        rows = self._composite_rows()
        entries = [r.entry for r in rows]
        revision = _revision_of(rows)
        hidden = sum(1 for e in entries if not _visible(e, branch))
        lines = ["MNEMON RUNTIME MEMORY SNAPSHOT", f"Revision: {revision}"]
        if branch is not None:
            suffix = ""
            if hidden:
                suffix = f" ({hidden} branch-scoped entr{'y' if hidden == 1 else 'ies'} hidden)"
            lines.append(f"Git branch: {branch}{suffix}")
        for target, role in (("user", "user profile"), ("memory", "working reference")):
            stored = [e for e in entries if e.target == target]
            shown = [e for e in stored if _visible(e, branch)]
            used = joined_bytes(e.content for e in stored)
            name = _FILE_NAMES[target]
            body = DELIMITER.join(
                f"[importance={e.importance}; created={_age(e.created_at, moment)}; "
                f"updated={_age(e.updated_at, moment)}]\n{e.content}"
                for e in shown
            )
            lines += [
                "",
                (
                    f"Contents of {name} ({role}; entries: {len(shown)}; "
                    f"UTF-8 bytes: {used}/{self._limits[target]})"
                ),
                f'<runtime-memory-file name="{name}">',
                body or "(empty)",
                "</runtime-memory-file>",
            ]
        return RuntimeSnapshot(
            text="\n".join(lines), revision=revision, branch=branch, hidden=hidden
        )

    # -- mutations ---------------------------------------------------------------------------

    def add(
        self,
        target: RuntimeTarget,
        content: str,
        *,
        importance: Importance = "normal",
        branches: Sequence[str] | None = None,
    ) -> RuntimeReceipt:
        """Append an entry; an identical entry already present is a committed no-op.

        Args:
            target: ``"user"`` (USER.md) or ``"memory"`` (MEMORY.md).
            content: the entry text; whitespace runs are collapsed. NUL characters and lone
                surrogates are refused, never stored or stripped silently.
            importance: ``"critical"``, ``"normal"`` or ``"low"``.
            branches: MEMORY only: git branches the entry is shown on.

        Raises:
            InvalidInputError: a wrong type or a value that cannot be stored; nothing changed.
            CapacityError: the entry does not fit (``plan`` says what maintenance needs).
            StorageError: the disk refused the write (``storage-full``, ``storage-read-only``,
                ...) or a managed path is a link (``symlink-refused``); every file unchanged.
        """
        return self._mutate(
            self._request("add", target, content=content, importance=importance, branches=branches)
        )

    def replace(
        self,
        target: RuntimeTarget,
        old_text: str,
        content: str,
        *,
        importance: Importance | None = None,
        branches: Sequence[str] | None = None,
    ) -> RuntimeReceipt:
        """Replace the entry matching ``old_text`` (exact full match first, then unique substring).

        ``importance`` defaults to the old entry's; ``branches``: ``None`` keeps, ``[]`` clears.
        """
        return self._mutate(
            self._request(
                "replace",
                target,
                content=content,
                old_text=old_text,
                importance=importance,
                branches=branches,
            )
        )

    def remove(self, target: RuntimeTarget, old_text: str) -> RuntimeReceipt:
        """Remove the entry matching ``old_text`` (exact match first, then unique substring)."""
        return self._mutate(self._request("remove", target, old_text=old_text))

    def apply(self, request: RuntimeMutation) -> RuntimeReceipt:
        """Run a :class:`RuntimeMutation` (the form graphs and tools pass around)."""
        return self._mutate(self._checked(request))

    # -- maintenance primitives (host-only) ---------------------------------------------------

    def plan_maintenance(self, request: RuntimeMutation) -> MaintenancePlan:
        """Plan capacity maintenance for ``request`` against the committed state (no writes).

        The first step of a maintenance run: it asks ``runtime`` ``maintenance`` and ``write``
        so that a refused run stops before any Memory Space write.
        """
        request = self._checked(request)
        self._admit_maintenance(with_write=True)
        entries = self._files[request.target].read().of(request.target)
        return self._plan(request, entries, _revision_of(self._composite_rows()))

    def compact_and_mutate(
        self,
        revision: str,
        request: RuntimeMutation,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None = None,
        *,
        archive_left_out: bool = True,
        stored_elsewhere: Collection[str] = (),
    ) -> RuntimeReceipt:
        """Replace the target's entries by ``compacted`` and apply ``request``, in one commit.

        Fails with :class:`ConflictError` if the revision moved. Candidates are packed
        deterministically (importance first, then their order) into ``max_bytes`` (default: the
        plan budget). Original entries not kept verbatim are appended to ``runtime/archived/``
        under the same lock unless ``archive_left_out`` is false or their text is in
        ``stored_elsewhere`` (the caller already stored them durably in a Memory Space), so
        nothing is silently dropped.

        Raises:
            ParticipationError / ReadOnlyError: ``runtime`` ``maintenance`` or ``write``
                refuses (before any I/O).
        """
        request = self._checked(request)
        self._admit_maintenance(with_write=True)
        return self._compact(
            revision, request, compacted, max_bytes, archive_left_out, stored=stored_elsewhere
        )

    def compact_target(
        self,
        revision: str,
        target: RuntimeTarget,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None = None,
        *,
        archive_left_out: bool = True,
    ) -> RuntimeReceipt:
        """Same packing as :meth:`compact_and_mutate` without a pending mutation.

        Asks ``runtime`` ``maintenance`` before any I/O.
        """
        target = validate_target(target)
        self._admit_maintenance(with_write=False)
        return self._compact(revision, None, compacted, max_bytes, archive_left_out, target)

    # -- internals ---------------------------------------------------------------------------

    def _request(self, action: str, target: Any, **fields: Any) -> RuntimeMutation:
        target = validate_target(target)
        content = fields.get("content")
        old_text = fields.get("old_text")
        importance = fields.get("importance")
        if importance is not None:
            importance = validate_importance(importance)
        branches = fields.get("branches")
        if branches is not None:
            branches = validate_branches(branches)
            if target == "user" and branches is not None:
                raise InvalidInputError("branches applies to target=memory only")
            if branches is None and action == "replace":
                branches = ()  # explicit [] clears on replace
        return RuntimeMutation(
            action=action,  # type: ignore[arg-type]
            target=target,
            content=normalize_content(content) if action != "remove" else None,
            old_text=normalize_content(old_text, "old_text") if action != "add" else None,
            importance=importance,
            branches=branches,
        )

    def _checked(self, request: Any) -> RuntimeMutation:
        if not isinstance(request, RuntimeMutation):
            raise InvalidInputError("request must be a RuntimeMutation")
        # getattr: a model_construct()-ed request may lack fields or hold any value.
        action = getattr(request, "action", None)
        if not isinstance(action, str) or action not in ("add", "replace", "remove"):
            raise InvalidInputError("action must be add, replace or remove")
        return self._request(
            action,
            getattr(request, "target", None),
            content=getattr(request, "content", None),
            old_text=getattr(request, "old_text", None),
            importance=getattr(request, "importance", None),
            branches=getattr(request, "branches", None),
        )

    def _composite_rows(self) -> list[_Row]:
        user_file, memory_file = self._files["user"], self._files["memory"]
        if user_file is memory_file:
            return list(memory_file.read().rows)
        return user_file.read().rows_of("user") + memory_file.read().rows_of("memory")

    def _composite(self) -> list[RuntimeEntry]:
        return [r.entry for r in self._composite_rows()]

    def _apply(self, request: RuntimeMutation, entries: list[RuntimeEntry]) -> _Applied:
        stamp = _now_iso(self._clock())
        target = request.target
        if request.action == "add":
            assert request.content is not None
            pending = PendingEntry(
                content=request.content,
                importance=request.importance or "normal",
                branches=request.branches or None,
            )
            if any(e.content == request.content for e in entries):
                return _Applied(
                    entries,
                    False,
                    "Entry already exists (no duplicate added).",
                    None,
                    pending,
                    {},
                )
            new = RuntimeEntry(
                content=request.content,
                created_at=stamp,
                updated_at=stamp,
                target=target,
                importance=pending.importance,
                branches=pending.branches,
            )
            return _Applied(
                [*entries, new],
                True,
                "Entry added.",
                None,
                pending,
                {"added": request.content},
                new,
            )
        assert request.old_text is not None
        index = _match(entries, request.old_text, target)
        old = entries[index]
        if request.action == "remove":
            rest = entries[:index] + entries[index + 1 :]
            return _Applied(rest, True, "Entry removed.", old, None, {"removed": old.content})
        assert request.content is not None
        branches = old.branches if request.branches is None else (request.branches or None)
        pending = PendingEntry(
            content=request.content,
            importance=request.importance or old.importance,
            branches=branches,
        )
        if any(i != index and e.content == request.content for i, e in enumerate(entries)):
            raise InvalidInputError(
                f"another {target} entry already has this content; remove the old entry instead"
            )
        fields = {"replaced": {"from": old.content, "to": request.content}}
        if (old.content, old.importance, old.branches) == (
            pending.content,
            pending.importance,
            pending.branches,
        ):
            return _Applied(entries, False, "Entry replaced.", old, pending, fields)
        new = old.model_copy(
            update={
                "content": pending.content,
                "importance": pending.importance,
                "branches": pending.branches,
                "updated_at": stamp,
            }
        )
        updated = [*entries[:index], new, *entries[index + 1 :]]
        return _Applied(updated, True, "Entry replaced.", old, pending, fields, new)

    def _plan(
        self, request: RuntimeMutation, entries: list[RuntimeEntry], revision: str
    ) -> MaintenancePlan:
        applied = self._apply(request, entries)
        limit = self._limits[request.target]
        used = joined_bytes(e.content for e in entries)
        projected = joined_bytes(e.content for e in applied.entries)
        compactable = tuple(
            e
            for e in entries
            if e is not applied.excluded
            and not (applied.pending is not None and e.content == applied.pending.content)
        )
        pending_bytes = entry_bytes(applied.pending.content) if applied.pending else 0
        return MaintenancePlan(
            revision=revision,
            action=request.action,
            target=request.target,
            entries=compactable,
            pending=applied.pending if applied.changed else None,
            excluded=applied.excluded,
            used=used,
            projected=projected,
            limit=limit,
            requires_maintenance=applied.changed and _overflows(used, projected, limit),
            budget=compaction_budget(limit, pending_bytes if applied.changed else 0),
        )

    def _admit_maintenance(self, *, with_write: bool) -> None:
        # Capacity maintenance, and the pending mutation it applies, under the same trigger.
        self.kernel.admit("runtime", "maintenance")
        if with_write:
            self.kernel.admit("runtime", "write")

    def _mutate(self, request: RuntimeMutation) -> RuntimeReceipt:
        self.kernel.admit("runtime", "write")
        file = self._files[request.target]
        with file.lock():
            state = file.read()
            entries = state.of(request.target)
            applied = self._apply(request, entries)
            limit = self._limits[request.target]
            used = state.target_bytes(request.target)
            projected = _projected_bytes(used, len(entries), applied)
            alone = len((request.content or "").encode())
            if applied.changed and alone > limit:  # no compaction can ever make room
                raise CapacityError(
                    f"The new {request.target} entry alone is {alone} bytes, more than the whole "
                    f"limit ({limit} bytes), so compacting other entries cannot make room. "
                    "Shorten it, split it into smaller entries, or store it as a Document.",
                    code="runtime-entry-too-large",
                )
            if applied.changed and _overflows(used, projected, limit):
                plan = self._plan(request, entries, _revision_of(self._composite_rows()))
                raise CapacityError(
                    f"Would exceed {request.target} runtime memory capacity: {projected} bytes "
                    f"(current {used}, limit {limit}). Archive and compact runtime memory before "
                    "retrying.",
                    plan=plan,
                    code="runtime-capacity",
                )
            if applied.changed:
                file.commit(_apply_to_file(state, applied), [request.target])
            return self._receipt(
                request.action,
                request.target,
                applied.message,
                applied.changed,
                **applied.receipt_fields,
            )

    def _compact(
        self,
        revision: str,
        request: RuntimeMutation | None,
        compacted: Sequence[CompactedEntry],
        max_bytes: int | None,
        archive_left_out: bool,
        target: RuntimeTarget | None = None,
        *,
        stored: Collection[str] = (),
    ) -> RuntimeReceipt:
        target = request.target if request is not None else target
        assert target is not None
        _check_compaction_args(revision, max_bytes)
        candidates = _checked_candidates(compacted, target)
        file = self._files[target]
        with file.lock():
            state = file.read()
            if _revision_of(self._composite_rows()) != revision:
                raise ConflictError(
                    "runtime memory changed while archival was running; no compacted data was "
                    "applied. Plan again from the current revision.",
                )
            entries = state.of(target)
            limit = self._limits[target]
            plan = self._plan(request, entries, revision) if request is not None else None
            pending = plan.pending if plan is not None else None
            _reject_bad_candidates(candidates, plan)
            if max_bytes is None:
                max_bytes = plan.budget if plan is not None else compaction_budget(limit)
            stamp = _now_iso(self._clock())
            new_entries = _materialise(_pack(candidates, max_bytes), entries, target, stamp)
            if plan is not None and pending is not None:
                new_entries.append(_pending_entry(plan, pending, stamp))
            projected = joined_bytes(e.content for e in new_entries)
            if projected > limit:
                raise CapacityError(
                    f"Would exceed {target} runtime memory capacity: {projected} bytes "
                    f"(current {state.target_bytes(target)}, limit {limit}). The compacted "
                    "entries do not leave room; compact further before retrying.",
                    plan=plan,
                    code="runtime-capacity",
                )
            kept = {e.content for e in new_entries}
            originals = plan.entries if plan is not None else tuple(entries)
            left_out = [e for e in originals if e.content not in kept]
            elsewhere = set(stored)  # left-out entries with a durable copy in a Memory Space
            archive = [
                (f"{target}.jsonl", _archive_line(e, stamp, revision))
                for e in left_out
                if archive_left_out and e.content not in elsewhere
            ]
            changed = [e.to_json() for e in new_entries] != [e.to_json() for e in entries]
            if changed:
                file.commit(_with_target(state, target, new_entries), [target], archive)
            action = request.action if request is not None else "compact"
            fields = {"added": pending.content} if pending is not None and action == "add" else {}
            return self._receipt(
                action,
                target,
                _COMPACT_MESSAGES[action],
                changed,
                left_out=tuple(e.content for e in left_out),
                archived_locally=len(archive),
                **fields,
            )

    def _receipt(
        self,
        action: str,
        target: RuntimeTarget,
        message: str,
        changed: bool,
        **fields: Any,
    ) -> RuntimeReceipt:
        state = self._files[target].read()
        entries = state.of(target)
        return RuntimeReceipt(
            status="committed",
            message=message,
            changed=changed,
            revision=_revision_of(self._composite_rows()),
            action=action,  # type: ignore[arg-type]
            target=target,
            entry_count=len(entries),
            usage=Usage(used=state.target_bytes(target), limit=self._limits[target]),
            **fields,
        )


_COMPACT_MESSAGES = {
    "compact": "Runtime memory compacted.",
    "add": "Runtime memory compacted; entry added.",
    "replace": "Runtime memory compacted; entry replaced.",
    "remove": "Runtime memory compacted; entry removed.",
}


def _projected_bytes(used: int, count: int, applied: _Applied) -> int:
    """Bytes after an add / replace / remove, from the one entry it changes."""
    if not applied.changed:
        return used
    old = entry_bytes(applied.excluded.content) if applied.excluded is not None else 0
    new = entry_bytes(applied.new_entry.content) if applied.new_entry is not None else 0
    if applied.excluded is None:  # add
        return used + new + (DELIMITER_BYTES if count else 0)
    if applied.new_entry is None:  # remove
        return used - old - (DELIMITER_BYTES if count > 1 else 0)
    return used - old + new


def _overflows(used: int, projected: int, limit: int) -> bool:
    # Only growth past the limit needs maintenance: a shrinking replace or a remove never does,
    # even when the file is already over a newly lowered limit.
    return projected > limit and projected > used


def _match(entries: Sequence[RuntimeEntry], old_text: str, target: str) -> int:
    exact = [i for i, e in enumerate(entries) if e.content == old_text]
    if len(exact) == 1:
        return exact[0]
    candidates = exact or [i for i, e in enumerate(entries) if old_text in e.content]
    if not candidates:
        raise NoMatchError(f'No {target} entry contains "{old_text}".')
    if len(candidates) > 1:
        raise AmbiguousMatchError(
            f'Multiple {target} entries contain "{old_text}"; use a unique substring.'
        )
    return candidates[0]


def _with_target(state: _State, target: str, entries: list[RuntimeEntry]) -> _State:
    """Swap one target's entries wholesale, keeping the other target's entries."""
    return _State.derive(state, (*(e for e in state.entries if e.target != target), *entries))


def _apply_to_file(state: _State, applied: _Applied) -> _State:
    """Apply an add / replace / remove to the whole file, keeping every other entry in place."""
    if applied.excluded is None:  # add
        assert applied.new_entry is not None
        return _State((*state.rows, _row(applied.new_entry)))
    if applied.new_entry is None:  # remove
        return _State(tuple(r for r in state.rows if r.entry is not applied.excluded))
    new = _row(applied.new_entry)
    return _State(tuple(new if r.entry is applied.excluded else r for r in state.rows))


def _checked_candidates(compacted: Any, target: str) -> list[CompactedEntry]:
    if isinstance(compacted, (str, bytes)) or not isinstance(compacted, Sequence):
        raise InvalidInputError("compacted must be a list of CompactedEntry")
    result = []
    for index, item in enumerate(compacted):
        if isinstance(item, dict):
            try:
                item = CompactedEntry.model_validate(item)
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise InvalidInputError(
                    f"compacted[{index}] is not a CompactedEntry: {exc}"
                ) from None
        if not isinstance(item, CompactedEntry):
            raise InvalidInputError(f"compacted[{index}] must be a CompactedEntry")
        branches = validate_branches(item.branches)
        if target == "user" and branches is not None:
            raise InvalidInputError("branches applies to target=memory only")
        result.append(
            CompactedEntry(
                content=normalize_content(item.content, f"compacted[{index}].content"),
                importance=validate_importance(item.importance),
                branches=branches,
                source_indexes=item.source_indexes,
            )
        )
    return result


def _reject_bad_candidates(
    candidates: Sequence[CompactedEntry], plan: MaintenancePlan | None
) -> None:
    pending = plan.pending.content if plan is not None and plan.pending else None
    excluded = plan.excluded.content if plan is not None and plan.excluded else None
    seen: set[str] = set()
    for cand in candidates:
        if cand.content in seen:
            raise InvalidInputError("compacted runtime memory contains duplicate entries")
        seen.add(cand.content)
        if cand.content == pending:
            raise InvalidInputError("compacted runtime memory duplicates the pending mutation")
        if cand.content == excluded:
            raise InvalidInputError(
                "compacted runtime memory reintroduces the replaced or removed entry"
            )


def _materialise(
    kept: Sequence[CompactedEntry], entries: Sequence[RuntimeEntry], target: str, stamp: str
) -> list[RuntimeEntry]:
    """Entries for the kept candidates; unchanged text keeps its history and scope."""
    by_content = {e.content: e for e in entries}
    result = []
    for cand in kept:
        existing = by_content.get(cand.content)
        if existing is not None:
            result.append(existing.model_copy(update={"importance": cand.importance}))
        else:
            result.append(
                RuntimeEntry(
                    content=cand.content,
                    created_at=stamp,
                    updated_at=stamp,
                    target=target,  # type: ignore[arg-type]
                    importance=cand.importance,
                    branches=cand.branches,
                )
            )
    return result


def _check_compaction_args(revision: Any, max_bytes: Any) -> None:
    if not isinstance(revision, str):
        raise InvalidInputError("revision must be the plan's revision string")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
    ):
        raise InvalidInputError("max_bytes must be a non-negative integer")


def _pending_entry(plan: MaintenancePlan, pending: PendingEntry, stamp: str) -> RuntimeEntry:
    """The entry a maintenance commit adds for the pending mutation."""
    # A replaced entry keeps its creation time; an added one starts now.
    replaced = plan.action == "replace" and plan.excluded is not None
    return RuntimeEntry(
        content=pending.content,
        created_at=plan.excluded.created_at if replaced and plan.excluded else stamp,
        updated_at=stamp,
        target=plan.target,
        importance=pending.importance,
        branches=pending.branches,
    )


def _archive_line(entry: RuntimeEntry, stamp: str, revision: str) -> bytes:
    record = {"archived_at": stamp, "revision": revision, "entry": entry.to_json()}
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()


def _pack(candidates: Sequence[CompactedEntry], budget: int) -> list[CompactedEntry]:
    """Keep candidates by importance (then order) while the joined bytes fit ``budget``.

    The kept ones come back in their original order.
    """
    order = sorted(
        range(len(candidates)),
        key=lambda i: (_IMPORTANCE_RANK[candidates[i].importance], i),
    )
    kept: set[int] = set()
    used = 0
    for i in order:
        cost = entry_bytes(candidates[i].content) + (DELIMITER_BYTES if kept else 0)
        if used + cost <= budget:
            kept.add(i)
            used += cost
    return [c for i, c in enumerate(candidates) if i in kept]
