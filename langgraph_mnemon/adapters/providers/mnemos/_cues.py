"""Conversation cues of the native provider's smart search, applied to the best rows after the
keyword, dense, neighbour and feedback scores (:func:`._search.rank`).

- A row that asks (its text ends with a question mark: ``._sql.asks``) tells little by
  itself: it keeps ``1 - HybridWeights.question`` of its score.
- The row written right after one that asks is often its answer, and rarely repeats the
  question's words: it gains ``HybridWeights.reply`` × the asking row's score.
- A query that names a calendar date (:mod:`._dates`) lifts each of the best rows dated then by
  ``HybridWeights.dated`` × the best score.

The lifts are not capped: they order the rows, and a returned score is capped at 1
(:func:`._search.results`). The three shares were set on three LoCoMo-R dev conversations and
checked on the two others (bench/locomo.py), never from the questions' wording.

Example:
    >>> final = {4: 0.9, 5: 0.5}
    >>> apply_cues(final, {4: (3, 5)}, {4}, HybridWeights(question=0.5, reply=0.5))
    >>> final
    {4: 0.45, 5: 0.95}
"""

from __future__ import annotations

from collections.abc import Mapping

from langgraph_mnemon.adapters.providers.mnemos._dates import DateMention
from langgraph_mnemon.adapters.providers.mnemos._ranking import HybridWeights

__all__ = ["apply_cues", "apply_dates"]


def apply_cues(
    final: dict[int, float],
    near: Mapping[int, tuple[int, ...]],
    asking: set[int],
    weights: HybridWeights,
) -> None:
    """The conversation cues of the rows of ``near`` (the best rows, with their previous and
    next rows): each of them that asks (in ``asking``) keeps ``1 - weights.question`` of its
    score, and the row right after one that asks gains ``weights.reply`` × the asking row's
    score (as it was before the cues). Not capped: :func:`ranked_seqs` orders by these values.

    Example:
        >>> final = {4: 0.9, 5: 0.5}
        >>> apply_cues(final, {4: (3, 5)}, {4}, HybridWeights(question=0.5, reply=0.5))
        >>> final
        {4: 0.45, 5: 0.95}
    """
    lifts: dict[int, float] = {}
    asks = {seq for seq in near if seq in asking}
    for seq, pair in near.items():
        for other in pair:
            before, after = (other, seq) if other < seq else (seq, other)
            if before in asking and before in final and after in final:
                asks.add(before)
                lifts[after] = weights.reply * final[before]
    for seq in asks:
        if seq in final:
            final[seq] *= 1.0 - weights.question
    for seq, lift in lifts.items():
        final[seq] += lift


def apply_dates(
    final: dict[int, float],
    dates: Mapping[int, tuple[int, int, int]],
    mention: DateMention,
    share: float,
) -> None:
    """Add ``share`` × the best score of ``final`` to each row of ``dates`` whose date agrees
    with the date the query names (``mention``: a :class:`._dates.DateMention`).

    Example:
        >>> final = {1: 0.8, 2: 0.5}
        >>> apply_dates(final, {2: (2023, 5, 8)}, DateMention(2023, 5, None), 0.5)
        >>> final
        {1: 0.8, 2: 0.9}
    """
    top = max(final.values(), default=0.0)
    if top <= 0:
        return
    for seq, date in dates.items():
        if seq in final and mention.agrees(date):
            final[seq] += share * top
