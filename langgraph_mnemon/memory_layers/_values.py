"""How a caller's value appears in an error message (shared by the SQL-backed layers)."""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]


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
