"""How a store item reads in recall: its value as text, not the JSON the row keeps.

The ``BaseStore`` facade keeps an item's value as its JSON text in the row's ``content`` (so
``get`` and ``search`` return exactly the value put) and its key in ``metadata["store_key"]``.
Recall (``MemorySpaces.search`` / ``related``, hence ``mnemon_recall``, the recall envelope, the
control plane and the CLI) shows such a row as text instead, by one rule (:func:`item_text`):

* a value with a text field (``text``, ``content`` or ``memory``, the first present) reads as
  that text; the value's other fields follow in brackets as ``key: value`` pairs;
* any other value reads as its ``key: value`` pairs, joined by ``"; "``.

Strings stay as they are, other values are compact JSON. Rows of any other kind (no string
``store_key``, or content that is not a JSON object) are left as they are.

Example:
    >>> item_text({"content": "The user's dog is called Rex."})
    "The user's dog is called Rex."
    >>> item_text({"food": "pizza", "tags": ["a", "b"]})
    'food: pizza; tags: ["a", "b"]'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langgraph_mnemon.memory_layers.spaces._models import MemoryRecord
from langgraph_mnemon.memory_layers.spaces._records import RecallResult

__all__ = ["STORE_KEY_FIELD", "TEXT_FIELDS", "as_recalled", "item_text", "recalled"]

STORE_KEY_FIELD = "store_key"
"""The metadata field that marks a row as a store item (its key)."""
TEXT_FIELDS = ("text", "content", "memory")
"""Fields whose value is the item's text, first present first (LangMem writes ``content``)."""


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return _pairs(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def _pairs(value: Mapping[str, Any]) -> str:
    return "; ".join(f"{key}: {_shown(field)}" for key, field in value.items())


def item_text(value: Mapping[str, Any]) -> str:
    """The text a store item's ``value`` reads as in recall (see the module docstring).

    Args:
        value: The item's value (a JSON object, as put into the store).

    Returns:
        The text field's text (other fields bracketed after it), else ``key: value`` pairs;
        empty for an empty value.

    Example:
        >>> item_text({"text": "Deploys need two approvals.", "team": "ops"})
        'Deploys need two approvals. (team: ops)'
    """
    for name in TEXT_FIELDS:
        text = value.get(name)
        if text is None or (isinstance(text, str) and not text.strip()):
            continue
        rest = {key: field for key, field in value.items() if key != name}
        shown = _shown(text)
        return f"{shown} ({_pairs(rest)})" if rest else shown
    return _pairs(value)


def as_recalled(row: MemoryRecord) -> MemoryRecord:
    """``row`` as recall shows it: a store item's content as its text, any other row as is.

    Example:
        >>> as_recalled(row).content  # row.content == '{"content": "Rex is a dog."}'
        'Rex is a dog.'
    """
    if not isinstance(row.metadata.get(STORE_KEY_FIELD), str):
        return row
    try:
        value = json.loads(row.content)
    except ValueError:
        return row
    text = item_text(value) if isinstance(value, dict) else ""
    return row.model_copy(update={"content": text}) if text.strip() else row


def recalled(result: RecallResult) -> RecallResult:
    """``result`` with each row as recall shows it (:func:`as_recalled`)."""
    return result.model_copy(update={"results": [as_recalled(r) for r in result.results]})
