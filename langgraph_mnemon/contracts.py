"""Pydantic models shared across layers: receipts, usage, common enumerations, and the one
rule for values that cross a public boundary (:func:`check_text`, :func:`safe_text`, and
:func:`shown` for quoting them in an error message).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator

from langgraph_mnemon.errors import InvalidInputError

__all__ = [
    "IMPORTANCE_LEVELS",
    "LOCAL",
    "CleanStr",
    "FrozenModel",
    "Importance",
    "Outcome",
    "Receipt",
    "ReceiptStatus",
    "Scope",
    "StepOutcome",
    "Usage",
    "check_text",
    "importance_level",
    "importance_word",
    "iso_utc",
    "outcome_of",
    "safe_text",
    "shown",
    "text_problem",
]

ReceiptStatus = Literal["committed", "skipped", "rejected", "failed"]
"""Only ``committed`` means the write happened; everything else means nothing was stored."""

Importance = Literal["critical", "normal", "low"]


class FrozenModel(BaseModel):
    """The base of every immutable value model: frozen, unknown fields refused.

    >>> class Point(FrozenModel):
    ...     x: int
    >>> Point(x=1).x
    1
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


_SCOPE_ID_MAX = 200
LOCAL = "local"
"""The id of the single local user and the single local project (today's one storage root)."""


def _scope_id(value: Any, what: str) -> str:
    # Ids are compared exactly: an id is never trimmed or folded, so "alice\u3000" can never
    # reach alice's memory. What could only arrive by accident or on purpose is refused instead.
    if not isinstance(value, str):
        raise ValueError(f"the scope's {what} must be text (got {type(value).__name__})")
    if not value or len(value) > _SCOPE_ID_MAX:
        raise ValueError(f"the scope's {what} must be 1-{_SCOPE_ID_MAX} characters")
    if value != value.strip():
        raise ValueError(
            f"the scope's {what} starts or ends with whitespace; pass the id exactly as issued"
        )
    if any(ord(c) < 32 or 127 <= ord(c) <= 159 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError(
            f"the scope's {what} holds a control character or a lone surrogate; pass a plain id"
        )
    return value


class Scope(FrozenModel):
    """Who and what an operation runs for: a ``(user, project)`` pair.

    USER.md belongs to the user; MEMORY.md and Documents to the project (or to user x project,
    by configuration); each Memory Space to an owner. ``Scope()`` is the single local scope:
    exactly the files and rows of a one-user install.

    Example:
        >>> Scope(user="alice", project="billing").user_key
        'user:alice'
        >>> Scope().is_local
        True
    """

    user: str = LOCAL
    project: str = LOCAL

    @field_validator("user", mode="before")
    @classmethod
    def _user(cls, value: Any) -> str:
        return _scope_id(value, "user")

    @field_validator("project", mode="before")
    @classmethod
    def _project(cls, value: Any) -> str:
        return _scope_id(value, "project")

    @property
    def is_local(self) -> bool:
        """True for the single local scope (no user and no project given)."""
        return self.user == LOCAL and self.project == LOCAL

    @property
    def user_key(self) -> str:
        """The owner key of the user's rows (USER entries, the user's Memory Spaces)."""
        return "user:" + quote(self.user, safe="")

    def held_per_user(self, per_user: bool = False) -> bool:
        """Whether the project memory of this scope (MEMORY.md, Documents, project spaces) is
        the user's own: by configuration (``per_user``: ``project_memory = user_project``), and
        always in the default project of a user other than the local one, so that nothing is
        shared between users unless a project is named (and, under auth, granted).

        Example:
            >>> Scope(user="alice").held_per_user()
            True
            >>> Scope(user="alice", project="x").held_per_user()
            False
        """
        return self.user != LOCAL and (per_user or self.project == LOCAL)

    def project_key(self, per_user: bool = False) -> str:
        """The owner key of the project's rows; ``per_user`` for user x project memory."""
        key = "project:" + quote(self.project, safe="")
        return f"{key}/{self.user_key}" if per_user else key

    def __str__(self) -> str:
        return f"{self.user}@{self.project}"


TimePrecision = Literal["seconds", "milliseconds", "microseconds"]


def iso_utc(moment: datetime | float, *, precision: TimePrecision = "seconds") -> str:
    """``moment`` (a datetime or a POSIX timestamp) as UTC ISO-8601 ending in ``Z``.

    Args:
        moment: an aware datetime (naive ones are taken as local time) or seconds since epoch.
        precision: ``seconds`` (``…:05Z``), ``milliseconds`` (``…:05.123Z``) or
            ``microseconds`` (``…:05.123456Z``).

    >>> iso_utc(0)
    '1970-01-01T00:00:00Z'
    >>> iso_utc(1.5, precision="milliseconds")
    '1970-01-01T00:00:01.500Z'
    """
    when = (
        datetime.fromtimestamp(moment, UTC)
        if isinstance(moment, int | float)
        else moment.astimezone(UTC)
    )
    base = when.strftime("%Y-%m-%dT%H:%M:%S")
    if precision == "milliseconds":
        return f"{base}.{when.microsecond // 1000:03d}Z"
    if precision == "microseconds":
        return f"{base}.{when.microsecond:06d}Z"
    return f"{base}Z"


IMPORTANCE_LEVELS: dict[str, int] = {"critical": 5, "normal": 3, "low": 1}
"""Runtime Memory's importance words on the 1-5 scale of Memory Spaces (and back: 4-5 read as
critical, 3 as normal, 1-2 as low). One mapping for the CLI, archival and every other place."""


def importance_level(value: str | int) -> int:
    """Importance on the 1-5 scale from a word or a number.

    Raises:
        InvalidInputError: neither a word nor 1-5.

    Example:
        >>> importance_level("critical"), importance_level("2"), importance_level(4)
        (5, 2, 4)
    """
    text = str(value).strip().lower()
    if text in IMPORTANCE_LEVELS:
        return IMPORTANCE_LEVELS[text]
    if text.isdigit() and 1 <= int(text) <= 5:
        return int(text)
    raise InvalidInputError(
        f"{value!r} is not an importance; give critical, normal or low, or 1-5 (critical=5, "
        "normal=3, low=1; as a word 4-5 count as critical, 3 normal, 1-2 low)."
    )


def importance_word(value: str | int) -> Importance:
    """Importance as a Runtime Memory word from a word or a number.

    Example:
        >>> importance_word("5"), importance_word("normal"), importance_word(2)
        ('critical', 'normal', 'low')
    """
    level = importance_level(value)
    return "critical" if level >= 4 else "normal" if level == 3 else "low"


Outcome = Literal["succeeded", "partial", "failed", "cancelled"]
"""How a multi-step operation ended (archival into several spaces, a batch of writes):
``succeeded`` = every step committed, ``partial`` = some did, ``failed`` = none did,
``cancelled`` = it was stopped before it finished. Never a partial failure shown as success."""


def outcome_of(steps: Sequence[StepOutcome], *, cancelled: bool = False) -> Outcome:
    """The :data:`Outcome` of ``steps`` (committed ones count as done)."""
    done = sum(1 for s in steps if s.status == "committed")
    if cancelled:
        return "cancelled"
    if steps and done == len(steps):
        return "succeeded"
    return "partial" if done else "failed"


class Usage(BaseModel):
    """Bytes used against a limit (UTF-8 bytes)."""

    model_config = ConfigDict(frozen=True)

    used: int
    limit: int


class Receipt(BaseModel):
    """What a mutation did. A write exists only after a receipt with ``status="committed"``.

    ``changed`` is false for a committed no-op (for example adding an entry that already exists).
    """

    model_config = ConfigDict(frozen=True)

    status: ReceiptStatus
    message: str
    changed: bool
    revision: str

    @property
    def committed(self) -> bool:
        return self.status == "committed"


class StepOutcome(BaseModel):
    """One step of a multi-step operation: what it targeted and how it ended."""

    model_config = ConfigDict(frozen=True)

    target: str  # e.g. a space id, a store key, "runtime/archived"
    status: ReceiptStatus
    message: str = ""
    ids: tuple[str, ...] = ()  # what the step created or changed


# --- text at the public boundary -----------------------------------------------------------
# Python strings may hold lone surrogates (``json.loads('"\\ud83d"')`` yields one: half an
# emoji from a model's output) and NUL. Neither can be written as UTF-8, stored in PostgreSQL
# text, or shown in a prompt, so every public entry point checks text with ``check_text`` and
# every observing path (hashing, activity, signals) reads it through ``safe_text``.


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a lone surrogate or NUL), or None."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"contains a lone surrogate at character {exc.start} (half of a character "
                "pair, e.g. a cut emoji); send complete characters"
            )
    if "\x00" in value:
        return "contains a NUL character (\\x00); remove it"
    return None


def check_text(value: Any, what: str, *, nul: Literal["reject", "strip"] = "reject") -> str:
    """``value`` as storable text, or :class:`InvalidInputError` naming ``what``.

    ``nul="strip"`` drops NUL characters instead of refusing them (for layers that document
    it); lone surrogates and non-strings are always refused.

    Example:
        >>> check_text("Deploys go through CI.", "content")
        'Deploys go through CI.'
        >>> check_text("half \\ud83d", "content")
        Traceback (most recent call last):
        InvalidInputError: content contains a lone surrogate at character 5 ...
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string (got {type(value).__name__})")
    if nul == "strip" and "\x00" in value:
        value = value.replace("\x00", "")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInputError(f"{what} {problem}")
    return value


def safe_text(value: Any) -> str:
    """Any value as storable text, never raising: lone surrogates become U+FFFD, NUL is dropped,
    a non-string is ``str()``-ed. For paths that observe input rather than accept it."""
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # a hostile __str__ must not end the caller
            value = f"<{type(value).__name__}>"
    if text_problem(value) is None:
        return value
    # UTF-16 joins surrogate pairs that arrived as two code points and replaces lone ones.
    fixed = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return fixed.replace("\x00", "")


def shown(value: Any, limit: int = 60) -> str:
    """A short, always printable form of ``value`` for an error message.

    Strings are cut to ``limit`` characters and ``repr``-ed (which escapes lone surrogates and
    NUL); small numbers, booleans and None are shown as they are; anything else by its type,
    because ``repr`` of a hostile value can be huge or fail (an int of 5,000 digits raises).

    Example:
        >>> shown("half \\ud83d")
        "'half \\\\ud83d'"
        >>> shown(10**5000)
        'an int'
    """
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "…")
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int) and abs(value) < 10**15:
        return repr(value)
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _clean(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


CleanStr = Annotated[str, AfterValidator(_clean)]
"""A ``str`` field that refuses lone surrogates and NUL (pydantic reports the field name)."""
