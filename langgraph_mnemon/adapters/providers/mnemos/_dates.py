"""Dates in recall: the calendar date a query names and the date a memory carries.

A question such as "what did Ana cook in May 2023?" or "where was Tim on 16 November, 2023?"
names a date; the native provider's smart search then favours the memories dated then
(``HybridWeights.dated``). Only what the query names is compared: "May 2023" matches any day
of that month, "2023" any day of that year.

A memory's date is its ``metadata["date"]`` when that is a date, written the ISO way
(``"2023-05-08"``, ``"2023-05-08T13:56:00Z"``) or in words (``"1:56 pm on 8 May, 2023"``,
``"May 8, 2023"``), so a conversation imported later keeps the day it happened; otherwise the
UTC day it was written (``created_at``).

Pure functions over strings and numbers.

Example:
    >>> mention = named_date("What did Ana cook in May 2023?")
    >>> mention
    DateMention(year=2023, month=5, day=None)
    >>> mention.agrees(memory_date({"date": "1:56 pm on 8 May, 2023"}, None))
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = ["DateMention", "dated", "memory_date", "named_date"]

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = (
    {name: i for i, name in enumerate(_MONTHS, start=1)}
    | {name[:3]: i for i, name in enumerate(_MONTHS, start=1) if name != "may"}
    | {"sept": 9}
)
_MONTH_WORD = "|".join(sorted(_MONTH, key=len, reverse=True))
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
# "8 May, 2023" / "May 8th 2023" / "May 2023" / "May" (a month name in a query must be
# capitalised: "may" is mostly the verb) and a lone year.
_WORDS = re.compile(
    rf"(?:\b{_DAY.format('d1')}\s+(?:of\s+)?)?\b(?P<month>{_MONTH_WORD})\b\.?"
    rf"(?:\s+{_DAY.format('d2')}\b(?!\s*(?::|[ap]\.?m\b)))?,?(?:\s+(?P<year>(?:19|20)\d\d)\b)?",
    re.IGNORECASE,
)
_ISO = re.compile(r"(?<!\d)(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?!\d)")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


class DateMention(NamedTuple):
    """The parts of a calendar date a query names (None: not named)."""

    year: int | None
    month: int | None
    day: int | None

    def agrees(self, date: tuple[int, int, int] | None) -> bool:
        """Whether ``date`` (year, month, day) has every part this mention names.

        Example:
            >>> DateMention(2023, 5, None).agrees((2023, 5, 8))
            True
        """
        if date is None:
            return False
        return all(want is None or want == got for want, got in zip(self, date, strict=True))


def named_date(query: str) -> DateMention | None:
    """The first calendar date ``query`` names (an ISO date, a month name with its day and
    year when given, or a year alone), or None.

    Example:
        >>> named_date("Where was Tim on 16 November, 2023?")
        DateMention(year=2023, month=11, day=16)
        >>> named_date("What may Ana cook?") is None
        True
    """
    iso = _ISO.search(query)
    if iso is not None:
        return DateMention(int(iso["year"]), int(iso["month"]), int(iso["day"]))
    for found in _WORDS.finditer(query):
        word = found["month"]
        if not word[:1].isupper():
            continue
        mention = _mention(found)
        if mention is not None and (word.lower() != "may" or mention != (None, 5, None)):
            return mention  # a bare "May" is too often the verb to count
    year = _YEAR.search(query)
    return DateMention(int(year.group()), None, None) if year is not None else None


def _mention(found: re.Match[str]) -> DateMention | None:
    day_text = found["d1"] or found["d2"]
    day = int(day_text) if day_text else None
    if day is not None and not 1 <= day <= 31:
        return None
    year = int(found["year"]) if found["year"] else None
    return DateMention(year, _MONTH[found["month"].lower()], day)


def memory_date(
    metadata: Mapping[str, Any] | None, created_at: float | None
) -> tuple[int, int, int] | None:
    """``(year, month, day)`` of a memory: its ``metadata["date"]`` when that is a date with a
    year, month and day, else the UTC day of ``created_at`` (None when neither is known).

    Example:
        >>> memory_date({"date": "2023-05-08T13:56:00Z"}, None)
        (2023, 5, 8)
        >>> memory_date({}, 0.0)
        (1970, 1, 1)
    """
    stated = metadata.get("date") if isinstance(metadata, Mapping) else None
    return dated(stated, created_at)


def dated(stated: Any, created_at: float | None) -> tuple[int, int, int] | None:
    """:func:`memory_date` from the value of ``metadata["date"]`` alone (what the search's
    date read selects: the database extracts it, so the rest of the metadata is never parsed).

    Example:
        >>> dated("8 May, 2023", None)
        (2023, 5, 8)
    """
    if isinstance(stated, str) and len(stated) <= 200:
        found = _full_date(stated)
        if found is not None:
            return found
    if created_at is None:
        return None
    day = datetime.fromtimestamp(float(created_at), UTC)
    return day.year, day.month, day.day


@lru_cache(maxsize=4096)  # a pure function of a short string; the same dates recur
def _full_date(text: str) -> tuple[int, int, int] | None:
    iso = _ISO.search(text)
    if iso is not None:
        return int(iso["year"]), int(iso["month"]), int(iso["day"])
    for found in _WORDS.finditer(text):
        mention = _mention(found)
        if mention is not None and None not in mention:
            return mention.year, mention.month, mention.day  # type: ignore[return-value]
    return None
