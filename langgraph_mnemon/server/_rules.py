"""The value rules the layers enforce, as JSON-schema fragments for the OpenAPI document.

Every limit and pattern comes from the layer that checks it (imported, never retyped), so the
schema cannot drift from the check. Patterns are written with explicit character classes (no
``\\s``), so ECMA-262 and Python regex engines read them alike. Where JSON Schema cannot say
what a layer checks (UTF-8 bytes), the stated rule is the stricter one that always fits: a
schema-valid value is never refused with 422.
"""

from __future__ import annotations

from typing import Any

from langgraph_mnemon.config import DocumentsConfig
from langgraph_mnemon.memory_layers import documents as _documents
from langgraph_mnemon.memory_layers import spaces as _spaces
from langgraph_mnemon.memory_layers.mnemos import MAX_TASK_ID_CHARS
from langgraph_mnemon.memory_layers.runtime import MAX_ENTRY_BYTES
from langgraph_mnemon.memory_layers.spaces import MAX_SECRET_CHARS, PROVIDER_CONFIG_CODE

MAX_SOURCE_PATHS = _documents.MAX_SOURCE_PATHS
DOCUMENT_QUERY_CHARS = _documents.MAX_QUERY_CHARS
DOCUMENT_SEARCH_LIMIT = _documents.MAX_SEARCH_LIMIT
MAX_TAGS = _spaces.MAX_TAGS
MAX_ENTITIES = _spaces.MAX_ENTITIES
MAX_QUESTION_CHARS = _spaces.MAX_QUERY_CHARS  # a question is answered from a recall query
MAX_MEMORY_ID_CHARS = _spaces.MAX_MEMORY_ID_CHARS
MAX_BROWSE_OFFSET = _spaces.MAX_BROWSE_OFFSET

# Every character str.strip() removes, plus U+FEFF (Runtime Memory collapses it too).
BLANK = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
CONTROLS = r"\x00-\x1f\x7f-\x9f"  # Unicode category Cc
# UTF-8 needs at most 4 bytes a character: this many characters always fit a byte limit.
_UTF8_MAX = 4


def _text(
    max_length: int, *, forbidden: str = r"\x00", blank_ok: bool = False, what: str = ""
) -> dict[str, Any]:
    """A string of at most ``max_length`` characters with no ``forbidden`` character and,
    unless ``blank_ok``, at least one character that is not blank."""
    if blank_ok:
        pattern = f"^[^{forbidden}]*$"
    else:
        pattern = f"^[^{forbidden}]*[^{forbidden}{BLANK}][^{forbidden}]*$"
    schema: dict[str, Any] = {"type": "string", "maxLength": max_length, "pattern": pattern}
    if not blank_ok:
        schema["minLength"] = 1
    if what:
        schema["description"] = what
    return schema


def runtime_entry() -> dict[str, Any]:
    """Runtime Memory content / old_text: not blank, no NUL or the § delimiter, at most
    MAX_ENTRY_BYTES UTF-8 bytes."""
    return _text(
        MAX_ENTRY_BYTES // _UTF8_MAX,
        forbidden=r"\x00§",
        what=f"At most {MAX_ENTRY_BYTES} UTF-8 bytes after whitespace is collapsed; maxLength "
        "is the character count that always fits.",
    ) | {"x-max-utf8-bytes": MAX_ENTRY_BYTES}


def runtime_actions() -> list[dict[str, Any]]:
    """Which fields each Runtime Memory action needs (JSON-schema if / then)."""
    needs = {"add": ["content"], "replace": ["old_text", "content"], "remove": ["old_text"]}
    return [
        {"if": {"properties": {"action": {"const": action}}}, "then": {"required": fields}}
        for action, fields in needs.items()
    ]


def document_title() -> dict[str, Any]:
    return _text(_documents.MAX_TITLE_CHARS, forbidden=CONTROLS)


def document_description() -> dict[str, Any]:
    return _text(
        _documents.MAX_DESCRIPTION_CHARS, forbidden=r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f",
        blank_ok=True,
    )  # fmt: skip


def document_body(limit_bytes: int | None = None) -> dict[str, Any]:
    """A Document body of at most ``limit_bytes`` (documents.body_limit_bytes) UTF-8 bytes."""
    limit = limit_bytes or DocumentsConfig.model_fields["body_limit_bytes"].default
    return _text(
        limit // _UTF8_MAX,
        what=f"At most {limit} UTF-8 bytes (documents.body_limit_bytes); maxLength is the "
        "character count that always fits.",
    ) | {"x-max-utf8-bytes": limit, "x-mnemon-rule": DOCUMENT_BODY}


DOCUMENT_BODY = "document-body"


def with_body_limit(schema: Any, limit_bytes: int) -> Any:
    """``schema`` with every Document body rule restated for ``limit_bytes`` (the host's
    documents.body_limit_bytes, known once the app has its host)."""
    if isinstance(schema, list):
        return [with_body_limit(item, limit_bytes) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("x-mnemon-rule") == DOCUMENT_BODY:
        return document_body(limit_bytes)
    return {key: with_body_limit(value, limit_bytes) for key, value in schema.items()}


def source_path() -> dict[str, Any]:
    """A workspace-relative path with ``/`` separators: no leading ``/`` or drive, no ``..``
    segment, no ``~`` first segment, no backslash or control character."""
    segment = rf"[^/\\{CONTROLS}]+"
    dotless = r"(?!\.\.(?:/|$))(?!\.(?:/|$))"
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": _documents.MAX_SOURCE_PATH_CHARS,
        # Named segments that are not ".", ".."; the first not "~" nor a drive ("C:").
        "pattern": rf"^(?!~(?:/|$))(?![A-Za-z]:){dotless}{segment}(?:/{dotless}{segment})*$",
        "description": "Relative to the workspace, '/'-separated; it must not resolve outside "
        "the workspace or into the storage root.",
    }


def space_name() -> dict[str, Any]:
    return _text(_spaces.MAX_NAME_CHARS)


def space_description() -> dict[str, Any]:
    return _text(_spaces.MAX_DESCRIPTION_CHARS, blank_ok=True)


def memory_content() -> dict[str, Any]:
    return _text(_spaces.MAX_CONTENT_CHARS)


def tag() -> dict[str, Any]:
    return _text(_spaces.MAX_TAG_CHARS)


def entity() -> dict[str, Any]:
    return _text(_spaces.MAX_ENTITY_CHARS)


def recall_query() -> dict[str, Any]:
    return _text(_spaces.MAX_QUERY_CHARS)


def question() -> dict[str, Any]:
    return _text(MAX_QUESTION_CHARS)


def provider_id() -> dict[str, Any]:
    return {"type": "string", "description": "A registered provider (GET providers)."}


PROVIDER_ID_PATTERN = r"^[a-z][a-z0-9-]{0,63}$"  # ProviderDescriptor.id
CONFIRM_CHARS = 64  # a space id
PROVIDER_CONFIG = PROVIDER_CONFIG_CODE


def provider_path_id() -> dict[str, Any]:
    return {"type": "string", "pattern": PROVIDER_ID_PATTERN}


def provider_config() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "The provider's settings, as its config_fields describe them (GET "
        f"providers). The provider checks them: one it refuses is 422 {PROVIDER_CONFIG}.",
        "x-mnemon-checked-by": "provider",
    }


def provider_secrets() -> dict[str, Any]:
    no_nul = r"^[^\x00]*$"
    return {
        "type": "object",
        "description": "Credentials (config_fields of kind secret), stored host-side and never "
        f"returned. The provider checks their names: one it does not take is 422 "
        f"{PROVIDER_CONFIG}. On PATCH an empty string removes a secret.",
        "propertyNames": {"type": "string", "pattern": no_nul, "maxLength": 64},
        "additionalProperties": {
            "type": "string",
            "pattern": no_nul,
            "maxLength": MAX_SECRET_CHARS,
        },
        "x-mnemon-checked-by": "provider",
    }


def confirm() -> dict[str, Any]:
    return {
        "type": "string",
        "maxLength": CONFIRM_CHARS,
        "description": "The space id typed again; anything else is 422 confirm-mismatch.",
    }


def space_id() -> dict[str, Any]:
    # The layer's own pattern object: letters, digits, '.', '_' or '-', 1-64 characters.
    return {"type": "string", "pattern": _spaces.SPACE_ID_PATTERN.pattern}


def document_id() -> dict[str, Any]:
    return {"type": "string", "pattern": _documents.DOCUMENT_ID_PATTERN.pattern, "format": "uuid"}


def memory_id() -> dict[str, Any]:
    return _text(MAX_MEMORY_ID_CHARS)


def task_id() -> dict[str, Any]:
    return _text(MAX_TASK_ID_CHARS, forbidden=r"\x00-\x1f")


MAX_PASS_ID_CHARS = 64  # Learning.get_pass reads no more
MAX_THREAD_ID_CHARS = 256  # learning.check_thread


def pass_id() -> dict[str, Any]:
    return _text(MAX_PASS_ID_CHARS, forbidden=r"\x00-\x1f", what="A learning pass id.")


def thread_id() -> dict[str, Any]:
    return _text(MAX_THREAD_ID_CHARS, forbidden=r"\x00-\x1f\x7f", what="A LangGraph thread id.")


PATH_PARAMETERS = {
    "document_id": document_id,
    "provider_id": provider_path_id,
    "space_id": space_id,
    "memory_id": memory_id,
    "task_id": task_id,
    "pass_id": pass_id,
}
"""Path parameter name → its schema (every ``{name}`` in the route table is listed)."""
