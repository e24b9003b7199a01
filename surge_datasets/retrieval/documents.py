"""The corpus as retrieval sees it: doc_ids in corpus order and one text per document.

A document's text is its title and abstract joined by a space, for BM25 and for the dense encoder alike.
Rows are read in slices from the corpus's memory-mapped Arrow table, so a million documents never sit in
Python objects all at once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

import numpy as np

from .storage import array_fingerprint

if TYPE_CHECKING:  # pragma: no cover
    from ..corpus import Corpus


def open_corpus(source: "Corpus | str | os.PathLike") -> "Corpus":
    """A :class:`~surge_datasets.corpus.Corpus`, given one or anything ``Corpus.open`` accepts."""
    if hasattr(source, "table"):
        return source  # already a Corpus
    from ..corpus import Corpus

    return Corpus.open(str(source))


def doc_text(title: str | None, abstract: str | None) -> str:
    """The text retrieval indexes for one paper: ``"<title> <abstract>"``."""
    title = (title or "").strip()
    abstract = (abstract or "").strip()
    return f"{title} {abstract}" if title and abstract else title or abstract


def doc_ids(corpus: "Corpus") -> np.ndarray:
    """doc_ids in corpus order (row i of every index is this array's item i)."""
    return corpus.table.column("doc_id").to_numpy().astype(np.int64, copy=False)


def corpus_fingerprint(corpus: "Corpus") -> dict:
    """Identity of a corpus for manifests: its size and a hash of its doc_id order."""
    ids = doc_ids(corpus)
    return {"n_docs": int(len(ids)), "doc_ids_sha256": array_fingerprint(ids)}


def texts_slice(corpus: "Corpus", start: int, stop: int) -> list[str]:
    """Texts of rows ``start:stop`` in corpus order."""
    part = corpus.table.slice(start, max(0, stop - start)).select(["title", "abstract"])
    titles = part.column("title").to_pylist()
    abstracts = part.column("abstract").to_pylist()
    return [doc_text(t, a) for t, a in zip(titles, abstracts)]


def iter_text_batches(corpus: "Corpus", batch_size: int = 50_000) -> Iterator[tuple[int, list[str]]]:
    """``(first_row, texts)`` for consecutive row batches of the corpus."""
    n = corpus.table.num_rows
    for start in range(0, n, batch_size):
        yield start, texts_slice(corpus, start, min(n, start + batch_size))


class DocTexts:
    """Texts of documents by doc_id, read from the corpus table on demand (training batches)."""

    def __init__(self, corpus: "Corpus"):
        self.table = corpus.table.select(["title", "abstract"])
        self.ids = doc_ids(corpus)
        self._order = np.argsort(self.ids, kind="stable")
        self._sorted = self.ids[self._order]

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, ids) -> np.ndarray:
        """Corpus rows of doc_ids (KeyError naming the first doc_id not in the corpus)."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self._sorted, ids)
        pos = np.minimum(pos, len(self._sorted) - 1)
        bad = self._sorted[pos] != ids
        if bad.any():
            raise KeyError(f"doc_id {int(ids[bad][0])} is not in the corpus")
        return self._order[pos]

    def texts(self, ids) -> list[str]:
        rows = self.rows(ids)
        part = self.table.take(rows)
        return [doc_text(t, a) for t, a in zip(part.column("title").to_pylist(), part.column("abstract").to_pylist())]
