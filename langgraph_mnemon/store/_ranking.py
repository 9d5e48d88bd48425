"""Query search over a whole namespace: the recall's items first, then every other item.

LangGraph's stores rank every item under the prefix for a query, up to ``limit`` after
``offset``. The facade's query search is federated recall (its strict relevance, up to 50
items); :func:`ranked` fills the rest of the window with the items the recall left out, ranked
by the same scorer without its neighbour and feedback lifts, so a vague query with a filter
still returns the items the filter passes. :func:`refresh_returned` restarts the time to live
of what a search returned (``refresh_ttl``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from langgraph_mnemon.store._mapping import _PAGE, _Batch, _passes, _Row, _row

__all__ = ["ranked", "refresh_returned"]


def ranked(
    batch: _Batch, op: SearchOp, head: list[SearchItem]
) -> tuple[list[SearchItem], list[str]]:
    """``offset`` / ``limit`` of the whole ranking: the recall's items, then (when they do
    not fill the window) every other indexed item that passes the filter, by the same
    scorer's relevance, capped at the recall's lowest score so ranks and scores agree.
    Also the memory ids of the window's items after the recall's that have a time to live."""
    wanted = op.offset + op.limit
    if op.limit == 0:
        return [], []
    # The items after the recall's, in order: their memory id when they have a time to live
    # (the rows to refresh), else None.
    tail: list[str | None] = []
    if len(head) < wanted and batch.recall_spaces:
        floor = min((h.score for h in head if h.score is not None), default=1.0)
        seen = {(h.namespace, h.key) for h in head}
        for namespace, row, score in _rest(batch, op, seen, wanted - len(head)):
            head.append(row.search_item(namespace, min(floor, score)))
            tail.append(row.memory_id if row.ttl is not None else None)
    first_tail = len(head) - len(tail)  # the window may start inside the tail
    expiring = [m for m in tail[max(0, op.offset - first_tail) :] if m is not None]
    return head[op.offset : wanted], expiring


def _rest(
    batch: _Batch, op: SearchOp, seen: set[tuple[tuple[str, ...], str]], need: int
) -> Iterator[tuple[tuple[str, ...], _Row, float]]:
    """Up to ``need`` indexed items of the searched namespaces that the recall did not
    return and the filter passes, best first, with their 0..1 relevance: the provider
    ranks every live row (seqs and scores only), then the rows are read in that order in
    growing chunks until ``need`` are found."""
    by_space = batch.recall_spaces
    records = [batch.records[sid] for sid in by_space]
    ranking = batch.keyed.rank(records, (op.query or "").strip())
    score = {seq: relevance for seq, relevance, _ in ranking}
    size, at, found = min(_PAGE, max(64, 2 * need)), 0, 0
    while at < len(ranking) and found < need:
        chunk = [seq for seq, _, _ in ranking[at : at + size]]
        at += len(chunk)
        for keyed in batch.keyed.rows(records, chunk):
            namespace, row = by_space.get(keyed.space_id), _row(keyed)
            if namespace is None or (namespace, row.key) in seen or not row.indexed:
                continue
            if _passes(row.value, op.filter):
                seen.add((namespace, row.key))
                found += 1
                yield namespace, row, score[keyed.seq]
                if found >= need:
                    return
        size = min(_PAGE, size * 2)


def refresh_returned(
    batch: _Batch, op: SearchOp, found: Any, items: Sequence[SearchItem], tail: Sequence[str]
) -> None:
    """Restart the time to live of the rows a query search returned (``refresh_ttl``): the
    first result row of each recalled item, as :meth:`MnemonStore._recalled` picked it, and
    the ranked rows after them (``tail``, memory ids)."""
    if not op.refresh_ttl or not items:
        return
    wanted = {(tuple(i.namespace), i.key) for i in items}
    ids: list[str] = list(tail)
    for insight in found.results:
        namespace = batch.recall_spaces.get(insight.space_id or "")
        if namespace is None:
            continue
        item = (namespace, _row(insight).key)
        if item in wanted:
            wanted.discard(item)
            ids.append(insight.id)
    sid = next(iter(batch.recall_spaces), None)
    if ids and sid is not None:
        batch.keyed.refresh(batch.records[sid], ids)
