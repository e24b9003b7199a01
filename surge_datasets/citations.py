"""Resolving a generated survey's references to corpus documents.

Order of evidence: the arXiv id of the entry, then its DOI, then its title reduced by the paper's
``title_key`` (ASCII letters only, lower-cased; on duplicate keys the last corpus doc wins, as the
paper's dict does). In ``paper`` mode a reference still unresolved is matched by a fuzzy title search
(BM25 candidates over corpus titles, then a character-level similarity of the title keys that must
reach ``fuzzy_threshold``). Each :class:`Resolution` records how it was made.

In ``reference`` mode, Markdown references carry no arXiv id or DOI (the paper's reader keeps the
title only), so they resolve by title alone, exactly as the paper's code does.
"""

from __future__ import annotations

import difflib
import threading
import weakref
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Optional

from .generated import GeneratedSurvey, Reference
from .identifiers import title_key

if TYPE_CHECKING:  # pragma: no cover
    from .corpus import Corpus

METHODS = ("arxiv_id", "doi", "title", "fuzzy_title")
DEFAULT_FUZZY_THRESHOLD = 0.9


@dataclass(frozen=True)
class Resolution:
    """How one reference was matched to the corpus (``doc_id`` None: unresolved, a likely hallucination)."""

    number: str
    doc_id: Optional[int]
    method: Optional[str] = None  # one of METHODS, None when unresolved
    score: Optional[float] = None  # similarity of a fuzzy title match

    @property
    def resolved(self) -> bool:
        return self.doc_id is not None

    def to_dict(self) -> dict:
        return asdict(self)


def resolve_references(
    references: dict[str, Reference] | GeneratedSurvey,
    corpus: "Corpus",
    mode: str = "reference",
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
) -> dict[str, Resolution]:
    """Resolution of every reference, keyed by reference number (same order as the input)."""
    refs = references.references if isinstance(references, GeneratedSurvey) else references
    out: dict[str, Resolution] = {}
    pending: list[Reference] = []
    for number, ref in refs.items():
        doc = corpus.by_arxiv_id(ref.arxiv_id) if ref.arxiv_id else None
        if doc is not None:
            out[number] = Resolution(number, doc.doc_id, "arxiv_id")
            continue
        doc = corpus.by_doi(ref.doi) if ref.doi else None
        if doc is not None:
            out[number] = Resolution(number, doc.doc_id, "doi")
            continue
        out[number] = Resolution(number, None)
        pending.append(ref)
    if pending:
        titled = [r for r in pending if r.title]
        ids = corpus.doc_ids_by_titles([r.title for r in titled]) if titled else []
        for ref, doc_id in zip(titled, ids):
            if doc_id is not None:
                out[ref.number] = Resolution(ref.number, int(doc_id), "title")
    if mode == "paper":
        todo = [refs[n] for n, r in out.items() if not r.resolved and refs[n].title and title_key(refs[n].title)]
        if todo:
            index = fuzzy_title_index(corpus)
            for ref in todo:
                hit = index.match(ref.title, fuzzy_threshold)
                if hit is not None:
                    out[ref.number] = Resolution(ref.number, hit[0], "fuzzy_title", round(hit[1], 4))
    return {n: out[n] for n in refs}


def resolution_summary(resolutions: dict[str, Resolution]) -> dict[str, int]:
    """Counts per method plus 'unresolved' and 'total'."""
    counts = {m: 0 for m in METHODS}
    counts["unresolved"] = 0
    for r in resolutions.values():
        counts[r.method or "unresolved"] += 1
    counts["total"] = len(resolutions)
    return counts


class FuzzyTitleIndex:
    """Near-duplicate title search over a corpus: BM25 over title words gives candidates, a
    ``difflib`` ratio over the paper's title keys decides."""

    def __init__(self, corpus: "Corpus", candidates: int = 10):
        import bm25s

        self._doc_ids = corpus.table.column("doc_id").to_pylist()
        titles = [t or "" for t in corpus.table.column("title").to_pylist()]
        self._keys = [title_key(t) for t in titles]
        self._k = max(1, min(candidates, len(titles)))
        self._retriever = bm25s.BM25()
        self._retriever.index(bm25s.tokenize(titles, stopwords="en", show_progress=False), show_progress=False)

    def match(self, title: str, threshold: float = DEFAULT_FUZZY_THRESHOLD) -> Optional[tuple[int, float]]:
        """(doc_id, similarity) of the most similar corpus title when it reaches ``threshold``."""
        import bm25s

        key = title_key(title)
        if not key:
            return None
        tokens = bm25s.tokenize([title], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return None
        rows, _ = self._retriever.retrieve(tokens, k=self._k, show_progress=False, n_threads=1)
        best: Optional[tuple[int, float]] = None
        for row in rows[0].tolist():
            ratio = difflib.SequenceMatcher(None, key, self._keys[row], autojunk=False).ratio()
            if ratio >= threshold and (best is None or ratio > best[1] or (ratio == best[1] and row > best[0])):
                best = (row, ratio)
        return None if best is None else (int(self._doc_ids[best[0]]), best[1])


_INDEXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def fuzzy_title_index(corpus: "Corpus") -> FuzzyTitleIndex:
    """The (lazily built, cached per corpus object) fuzzy title index."""
    with _LOCK:
        index = _INDEXES.get(corpus)
        if index is None:
            index = _INDEXES[corpus] = FuzzyTitleIndex(corpus)
        return index
