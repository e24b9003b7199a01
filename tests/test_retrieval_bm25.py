"""BM25: scores equal the formula computed by hand, and equal bm25s's own indexing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from surge_datasets import Corpus, CorpusDoc
from surge_datasets.retrieval.bm25 import Analyzer, BM25Index, build_bm25

# words chosen to be their own English Snowball stem and not stopwords
DOCS = [
    (10, "graph neural", "graph model"),  # graph x2, neural, model: 4 terms
    (20, "vision model", "robot data"),  # 4 terms
    (30, "graph", ""),  # 1 term
    (40, "text data", "text text model"),  # text x3, data, model: 5 terms
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bm25corpus")
    return Corpus.from_docs([CorpusDoc(doc_id=i, title=t, abstract=a) for i, t, a in DOCS], folder)


@pytest.fixture(scope="module")
def index(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("bm25idx") / "idx"
    build_bm25(corpus, out, progress=False)
    return BM25Index.open(out)


def by_hand(query_terms, k1=1.5, b=0.75):
    """The lucene BM25 of each document, written out from the definition."""
    docs = {
        10: ["graph", "neural", "graph", "model"],
        20: ["vision", "model", "robot", "data"],
        30: ["graph"],
        40: ["text", "data", "text", "text", "model"],
    }
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n  # 14 / 4 = 3.5
    scores = {}
    for doc_id, terms in docs.items():
        s = 0.0
        for q in query_terms:
            df = sum(1 for d in docs.values() if q in d)
            tf = terms.count(q)
            if tf == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf / (tf + k1 * (1 - b + b * len(terms) / avgdl))
        scores[doc_id] = s
    return scores


def test_analyzer_lowercases_drops_stopwords_and_stems():
    a = Analyzer()
    assert a.terms("The Graphs of a Learning-based MODEL") == ["graph", "learn", "base", "model"]


def test_scores_match_formula_by_hand(index):
    expected = by_hand(["graph", "model"])
    # graph: df 2, model: df 3; doc 10 has graph twice in 4 terms
    assert expected[10] > expected[30] > expected[40] > 0
    hits = index.search_one("graphs of the model", k=10)
    assert [d for d, _ in hits] == sorted(expected, key=lambda d: -expected[d])
    for doc_id, score in hits:
        assert score == pytest.approx(expected[doc_id], rel=1e-5)


def test_ranking_and_unknown_terms(index):
    expected = by_hand(["text", "data"])
    hits = index.search_one("text data quantum", k=2)
    assert [d for d, _ in hits] == [40, 20]
    assert hits[0][1] == pytest.approx(expected[40], rel=1e-5)
    assert index.search_one("quantum", k=5) == []  # no document shares a term
    assert index.search_one("", k=5) == []


def test_same_scores_as_bm25s_indexing(corpus, index):
    import bm25s
    import Stemmer

    texts = [f"{t} {a}".strip() for _, t, a in DOCS]
    ref = bm25s.BM25()
    ref.index(bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False), show_progress=False)
    for q in ["graph model", "text data robot", "neural vision"]:
        q_tokens = bm25s.tokenize([q], stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False)[0]
        np.testing.assert_allclose(index.scores(q), ref.get_scores(q_tokens), rtol=1e-5)


def test_saved_index_is_bm25s_and_memory_mapped(index):
    assert isinstance(index.retriever.scores["data"], np.memmap)
    assert list(index.doc_ids) == [10, 20, 30, 40]
    assert index.manifest["corpus"]["n_docs"] == 4
    # bm25s's own retrieval over the saved index agrees on the best document
    docs, scores = index.retriever.retrieve([index.analyzer.terms("graph model")], k=1, show_progress=False)
    assert int(index.doc_ids[docs[0][0]]) == 10


def test_batched_build_equals_single_batch_and_rebuild_replaces(corpus, index, tmp_path):
    out = tmp_path / "idx"
    build_bm25(corpus, out, progress=False, batch_size=3)  # two tokenisation batches
    np.testing.assert_allclose(BM25Index.open(out).scores("graph model text"), index.scores("graph model text"), rtol=1e-6)
    build_bm25(corpus, out, progress=False, k1=0.9, b=0.4)
    again = BM25Index.open(out)
    assert again.manifest["params"] == {"k1": 0.9, "b": 0.4, "method": "lucene"}
    assert again.search_one("graph model", k=1)[0][1] == pytest.approx(by_hand(["graph", "model"], k1=0.9, b=0.4)[10], rel=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
