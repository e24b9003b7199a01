"""A synthetic corpus of the official shape for benchmarks: titles ~10 words, abstracts ~157 words.

Words follow a Zipf-Mandelbrot law over a 150k-word vocabulary of pseudo-words whose most frequent ranks are
real English function words, so stopword removal, stemming and posting-list lengths behave as on arXiv
abstracts. The store is written once per size and seed under the work folder and reused.
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surge_datasets.corpus import Corpus, write_store  # noqa: E402
from surge_datasets.schemas import CorpusDoc, arrow_schema  # noqa: E402

OFFICIAL_DOCS = 1_086_992
FUNCTION_WORDS = ("the of and in to a is for we that this on with by as are an be from our which can it these "
                  "model learning data based using method network results show paper approach propose").split()


def vocabulary(size: int, rng: np.random.Generator) -> np.ndarray:
    letters = np.array(list(string.ascii_lowercase))
    words = set(FUNCTION_WORDS)
    out = list(FUNCTION_WORDS)
    while len(out) < size:
        n = int(rng.integers(3, 13))
        w = "".join(rng.choice(letters, n))
        if w not in words:
            words.add(w)
            out.append(w)
    return np.array(out, dtype=object)


def synthetic_corpus(folder: str | Path, n_docs: int = OFFICIAL_DOCS, *, vocab_size: int = 150_000, seed: int = 0,
                     batch_size: int = 50_000) -> Corpus:
    folder = Path(folder)
    store = folder / "store" / "manifest.json"
    if store.exists():
        c = Corpus.open(folder)
        if len(c) == n_docs:
            return c
    rng = np.random.default_rng(seed)
    vocab = vocabulary(vocab_size, rng)
    ranks = np.arange(1, vocab_size + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + 2.7) ** 1.07)
    cdf /= cdf[-1]
    schema = arrow_schema(CorpusDoc)

    def text(lengths: np.ndarray) -> list[str]:
        ids = np.searchsorted(cdf, rng.random(int(lengths.sum())))
        words = vocab[ids]
        ends = np.cumsum(lengths)
        return [" ".join(words[e - n:e]) for n, e in zip(lengths.tolist(), ends.tolist())]

    def batches():
        for start in range(0, n_docs, batch_size):
            n = min(batch_size, n_docs - start)
            titles = text(np.clip(rng.normal(10, 3, n).round().astype(int), 3, 25))
            abstracts = text(np.clip(rng.normal(157, 50, n).round().astype(int), 30, 400))
            cols = {name: pa.nulls(n, type=schema.field(name).type) for name in schema.names}
            cols["doc_id"] = pa.array(np.arange(start, start + n, dtype=np.int64))
            cols["title"] = pa.array(titles, type=pa.string())
            cols["abstract"] = pa.array(abstracts, type=pa.string())
            cols["authors"] = pa.array([[] for _ in range(n)], type=schema.field("authors").type)
            cols["categories"] = pa.array([[] for _ in range(n)], type=schema.field("categories").type)
            cols["source"] = pa.array(["synthetic"] * n, type=pa.string())
            yield pa.RecordBatch.from_arrays([cols[name] for name in schema.names], schema=schema)

    write_store(batches(), folder, built_from=f"synthetic n={n_docs} seed={seed}")
    return Corpus.open(folder)


def synthetic_titles(n: int, seed: int = 1, vocab_size: int = 150_000) -> list[str]:
    """Topic-like queries (~10 words) from the same vocabulary and law."""
    rng = np.random.default_rng(0)
    vocab = vocabulary(vocab_size, rng)  # same vocabulary as the corpus (seed 0)
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocab_size + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + 2.7) ** 1.07)
    cdf /= cdf[-1]
    return [" ".join(vocab[np.searchsorted(cdf, rng.random(int(rng.integers(6, 15))))]) for _ in range(n)]
