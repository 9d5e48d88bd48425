"""Documents (tier 2): substantial project records (ADRs, designs, runbooks) kept as Markdown.

``documents/index.json`` is the only authority. Every record names one Markdown file,
``documents/active/<slug>-<id8>.md`` or ``documents/archived/<slug>-<id8>.md``, rendered from the
record plus its body: a YAML frontmatter of JSON-quoted scalars, a blank line, the trimmed body and
a trailing newline. Capacity is counted in UTF-8 bytes of those rendered files: each body at most
``body_limit_bytes`` (2 MiB), all active files together at most ``active_limit_bytes`` (10 MiB).
Archived files do not count and never change again.

Commit discipline is the Runtime Memory one: new files are written to temp files, fsynced and
renamed; ``index.json`` is renamed last and is the commit marker; files the commit makes obsolete
are deleted only after it. A file that is about to be overwritten in place is first hard-linked
into ``documents/.recovery/`` so the committed body survives a crash between the two renames.
Opening repairs whatever a killed writer left: files that differ from the index are re-rendered
from it, files no record owns are removed, temp files are deleted. A corrupt ``index.json`` raises
:class:`StorageError` naming the file and is never overwritten.

Search reads an in-memory inverted index (word runs and Han uni/bigrams, substring-exact) that is
rebuilt lazily from the bodies when the index file changes; it never re-reads unchanged bodies.
Access times of returned documents go to an append-only ``access.jsonl`` (advisory: not
fsynced) that is folded into ``index.json`` by the next commit, so a search never rewrites the
whole index.

Example:
    >>> docs = Documents("./.mnemon", workspace=".")
    >>> receipt = docs.create("Release runbook", "1. Tag the release.\\n2. Publish.")
    >>> receipt.document.revision
    1
    >>> [hit.title for hit in docs.search("release publish").results]
    ['Release runbook']
    >>> plan = docs.plan_archive(receipt.document.id)
    >>> ref = docs.cold_reference(plan, "How releases are tagged and published.")
    >>> # ... a worker writes ref.text to a Memory Space, then:
    >>> docs.archive(plan.document_id, plan.revision, ref.summary, ["space-1"]).document.status
    'archived'

On a database (``Documents(root, database=db, owner_key="project:billing")``) the same records
and bodies live in two tables of the shared database (:mod:`._sql_schema`), one owner per
project scope, so server replicas share them; revisions, limits, LRU and search answer exactly
as on files, and there is nothing to repair. :func:`copy_documents` moves Documents between the
two (``mnemon export`` / ``mnemon import``).

Layout (private modules, lowest first): ``_models`` (records, mutations, plans, receipts,
hits), ``_validation`` (every argument check), ``_text`` (rendering, excerpts, evidence
windows), ``_state`` (committed state, access overlay), ``_records`` (what a mutation writes),
``_index`` / ``_search`` (the inverted index and ranking), ``_store`` (files, journal, commit),
``_sql_schema`` / ``_sql_store`` (the database twin of ``_store``), ``_repair``, ``_service``
(:class:`Documents`), ``_transfer`` (export / import), ``_cold_archive``.
"""

from langgraph_mnemon.memory_layers.documents._cold_archive import (
    extractive_summary,
    write_reference,
)
from langgraph_mnemon.memory_layers.documents._models import (
    DOCUMENT_ID_PATTERN,
    MAX_DESCRIPTION_CHARS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_SOURCE_PATH_CHARS,
    MAX_SOURCE_PATHS,
    MAX_TITLE_CHARS,
    ArchivePlan,
    CapacityPlan,
    ColdReference,
    DocumentHit,
    DocumentMutation,
    DocumentReceipt,
    DocumentRecord,
    DocumentSearchResult,
    RepairReport,
)
from langgraph_mnemon.memory_layers.documents._service import Documents
from langgraph_mnemon.memory_layers.documents._sql_schema import MIGRATIONS as DOCUMENTS_MIGRATIONS
from langgraph_mnemon.memory_layers.documents._text import (
    EARLIER_MARKER,
    LATER_MARKER,
    MODEL_MAX_CHARACTERS,
    MODEL_MAX_RECORDS,
    bound_for_model,
    evidence_window,
    excerpt,
    render_document,
    slugify,
)
from langgraph_mnemon.memory_layers.documents._transfer import copy_documents, fold_access_times
from langgraph_mnemon.memory_layers.text import normalize_text, required_coverage, tokenize

__all__ = [
    "DOCUMENTS_MIGRATIONS",
    "DOCUMENT_ID_PATTERN",
    "EARLIER_MARKER",
    "LATER_MARKER",
    "MAX_DESCRIPTION_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_SEARCH_LIMIT",
    "MAX_SOURCE_PATHS",
    "MAX_SOURCE_PATH_CHARS",
    "MAX_TITLE_CHARS",
    "MODEL_MAX_CHARACTERS",
    "MODEL_MAX_RECORDS",
    "ArchivePlan",
    "CapacityPlan",
    "ColdReference",
    "DocumentHit",
    "DocumentMutation",
    "DocumentReceipt",
    "DocumentRecord",
    "DocumentSearchResult",
    "Documents",
    "RepairReport",
    "bound_for_model",
    "copy_documents",
    "evidence_window",
    "excerpt",
    "extractive_summary",
    "fold_access_times",
    "normalize_text",
    "render_document",
    "required_coverage",
    "slugify",
    "tokenize",
    "write_reference",
]
