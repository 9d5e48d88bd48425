"""Turns: one immutable, pinned view of memory per agent turn, and what a turn may retrieve.

A turn begins with :meth:`Turns.begin` (the middleware's before-agent hook or the turn
subgraph's first node): the strategy builds a view spec from the Source facts, the kernel
admits each Source's projection and offers, and an immutable :class:`TurnView` is pinned with
its Wake, system sections and per-turn budgets. Tools resolve the executing turn's view
(:meth:`Turns.pinned`) and budgets (:meth:`Turns.retrieval`: the recall envelope, Related,
the Documents search, the General routes' call budgets). :meth:`Turns.end` records the turn's
activity for idle review and releases it.

Modules: ``_facts`` (Source facts), ``_offers`` (ONE table of routes and actions),
``_inputs`` (their input models and schemas), ``_models`` (TurnView and its parts),
``_composer`` (strategies and ViewComposer), ``_wake`` (system sections, Wake, cue,
WakeTracker), ``_budget`` (the evidence limits and route call budgets), ``_evidence`` /
``_recall`` / ``_related`` / ``_documents`` (the per-turn retrieval rules), ``_retrieval`` /
``_retrievals`` (TurnRetrieval(s)), ``_state`` (a retrieval state as data), ``_registry``
(live turns, in this process and in the shared database), ``_service`` (Turns).

Example:
    >>> start = mem.turns.begin(TurnScope(thread_id="t1"), TurnFacts())
    >>> evidence = mem.turns.retrieval(start.turn_id).recall(mem.spaces, "deploy steps")
    >>> mem.turns.end(start.turn_id)
"""

from langgraph_mnemon.memory_layers.turns._budget import (
    ATTEMPTS,
    FIRST_ATTEMPT_CHARS,
    FIRST_ATTEMPT_RESULTS,
    ITEM_CHARS,
    RESULT_LIMIT,
    RUNTIME_SEARCH_EVIDENCE,
    TOTAL_CHARS,
)
from langgraph_mnemon.memory_layers.turns._composer import (
    MAX_COMPOSE_ATTEMPTS,
    RUNTIME_PREFIX,
    ViewComposer,
    build_view_spec,
    validate_view_spec,
)
from langgraph_mnemon.memory_layers.turns._evidence import (
    RecallEvidence,
    RecallRequest,
    RelatedEvidence,
    admit,
    model_item,
)
from langgraph_mnemon.memory_layers.turns._facts import ScopeSources, collect_source_facts
from langgraph_mnemon.memory_layers.turns._inputs import (
    DocumentManageInput,
    DocumentSearchInput,
    EdgeType,
    ForgetInput,
    LinkInput,
    RelatedInput,
    RememberInput,
    RuntimeSearchInput,
    RuntimeWriteInput,
    SpaceManageInput,
    SpacesSearchInput,
    ViewInput,
    view_schema,
)
from langgraph_mnemon.memory_layers.turns._models import (
    PLUGIN_NAME,
    Cue,
    TurnScope,
    TurnView,
    Wake,
    plugin_metadata,
)
from langgraph_mnemon.memory_layers.turns._offers import (
    OFFER_CHANNELS,
    OFFERS,
    ActionOffer,
    Offer,
    RouteOffer,
    offer,
)
from langgraph_mnemon.memory_layers.turns._recall import (
    HINT_EXHAUSTED,
    HINT_FIRST,
    HINT_FIRST_EMPTY,
    HINT_REPLAY,
    HINT_SECOND,
)
from langgraph_mnemon.memory_layers.turns._registry import TURN_TTL_SECONDS, StoredTurn, TurnStore
from langgraph_mnemon.memory_layers.turns._retrieval import TurnRetrieval
from langgraph_mnemon.memory_layers.turns._retrievals import TurnRetrievals
from langgraph_mnemon.memory_layers.turns._service import (
    ReviewScheduler,
    TurnFacts,
    Turns,
    TurnStart,
)
from langgraph_mnemon.memory_layers.turns._state import DocumentsState, RetrievalState
from langgraph_mnemon.memory_layers.turns._text import (
    ELLIPSIS,
    call_key,
    clip_text,
    content_digest,
    query_digest,
    query_terms,
)
from langgraph_mnemon.memory_layers.turns._wake import (
    AVAILABILITY_HEADER,
    ROUTES_HEADER,
    TOOLS_HEADER,
    WakeTracker,
    reminder_cue,
    system_sections,
)

__all__ = [
    "ATTEMPTS",
    "AVAILABILITY_HEADER",
    "ELLIPSIS",
    "FIRST_ATTEMPT_CHARS",
    "FIRST_ATTEMPT_RESULTS",
    "HINT_EXHAUSTED",
    "HINT_FIRST",
    "HINT_FIRST_EMPTY",
    "HINT_REPLAY",
    "HINT_SECOND",
    "ITEM_CHARS",
    "MAX_COMPOSE_ATTEMPTS",
    "OFFERS",
    "OFFER_CHANNELS",
    "PLUGIN_NAME",
    "RESULT_LIMIT",
    "ROUTES_HEADER",
    "RUNTIME_PREFIX",
    "RUNTIME_SEARCH_EVIDENCE",
    "TOOLS_HEADER",
    "TOTAL_CHARS",
    "TURN_TTL_SECONDS",
    "ActionOffer",
    "Cue",
    "DocumentManageInput",
    "DocumentSearchInput",
    "DocumentsState",
    "EdgeType",
    "ForgetInput",
    "LinkInput",
    "Offer",
    "RecallEvidence",
    "RecallRequest",
    "RelatedEvidence",
    "RelatedInput",
    "RememberInput",
    "RetrievalState",
    "ReviewScheduler",
    "RouteOffer",
    "RuntimeSearchInput",
    "RuntimeWriteInput",
    "ScopeSources",
    "SpaceManageInput",
    "SpacesSearchInput",
    "StoredTurn",
    "TurnFacts",
    "TurnRetrieval",
    "TurnRetrievals",
    "TurnScope",
    "TurnStart",
    "TurnStore",
    "TurnView",
    "Turns",
    "ViewComposer",
    "ViewInput",
    "Wake",
    "WakeTracker",
    "admit",
    "build_view_spec",
    "call_key",
    "clip_text",
    "collect_source_facts",
    "content_digest",
    "model_item",
    "offer",
    "plugin_metadata",
    "query_digest",
    "query_terms",
    "reminder_cue",
    "system_sections",
    "validate_view_spec",
    "view_schema",
]
