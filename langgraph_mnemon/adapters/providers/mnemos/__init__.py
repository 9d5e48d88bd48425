"""The native ``mnemos`` provider: insights, edges and a keyword index in the shared SQL database.

It is the reference implementation of the provider contract and declares every capability:
search (``smart`` | ``keyword`` | ``basic``), browse, graph, entities, related, remember (+ batch),
link, forget (soft) and discover. Scores are normalised relevance in 0..1.

Search:

* ``keyword`` — BM25 over the analysed terms (:mod:`..text`) of one space. The keyword index
  (SQLite FTS5 or PostgreSQL ``tsvector``/GIN) supplies a candidate pool; every candidate is then
  scored in Python with per-space document frequencies, so SQLite and PostgreSQL give the same
  scores. The score is BM25 divided by the BM25 of an ideal row that holds each query term once
  (capped at 1): the share of the query's information the row carries.
* ``basic`` — rows that contain *every* query term, scored the same way.
* ``smart`` — hybrid: the keyword score blended with the cosine similarity of dense vectors from
  the configured embedder (when there is one), over the union of both candidate pools, plus a
  small boost from a row's temporal neighbours (the turns written just before and after it).

Remember writes the row, its keyword-index entry, term statistics, entities, an automatic
temporal edge to the previous row of the space and entity edges to recent rows that share an
entity, and (with an embedder) its vector — all in one transaction. Forget is a soft delete: the
row keeps its data with ``deleted_at`` set and leaves the index, statistics and vectors.

Modules (private): ``_sql`` (statements, keyword-index tokens, read queries), ``_ranking``
(BM25, dense and hybrid scoring, vector caches), ``_search`` (one search, step by step),
``_write`` (remember, forget, link transactions) and ``_provider`` (the class: synchronous hooks).

Example:
    >>> from langgraph_mnemon.adapters.providers.mnemos import MnemosProvider
    >>> provider = MnemosProvider(Database(create_engine("sqlite:///./mnemon.db")))
"""

from __future__ import annotations

from langgraph_mnemon.adapters.providers.mnemos._provider import MnemosProvider
from langgraph_mnemon.adapters.providers.mnemos._ranking import HybridWeights

__all__ = ["HybridWeights", "MnemosProvider"]
