"""Small hand-made benchmark data shared by the evaluation tests."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from surge_datasets.corpus import Corpus
from surge_datasets.schemas import CorpusDoc, Section, Survey

DOCS = [
    CorpusDoc(doc_id=1, arxiv_id="2101.00001", title="Alpha Networks", abstract="About alpha."),
    CorpusDoc(doc_id=2, arxiv_id="2101.00002", title="Beta Learning", abstract="About beta.", doi="10.1000/beta"),
    CorpusDoc(doc_id=3, arxiv_id="2101.00003", title="Gamma Graphs", abstract="About gamma."),
    CorpusDoc(doc_id=4, arxiv_id="2101.00004", title="Delta Models", abstract="About delta."),
    CorpusDoc(doc_id=5, title="Epsilon: A Study", abstract="First epsilon."),
    CorpusDoc(doc_id=6, title="EPSILON - a study!", abstract="Second epsilon (same title key, later in the corpus)."),
    CorpusDoc(doc_id=7, title="Zeta Transformers for Long Documents", abstract="About zeta."),
]

GT = Survey(
    survey_id=0, title="Survey of Things", all_cites=[2, 7, 2],
    structure=[
        Section(id="0", parent_id=None, level=0, title="root", content=""),
        Section(id="1", parent_id="0", level=1, title="Introduction", content="intro " * 30),
        Section(id="2", parent_id="0", level=1, title="Short", content="too short"),
    ],
)

# the hand-computed example of the tests (see test_eval_recall_accuracy.py)
EXAMPLE_MD = """# My Survey
## Intro
Alpha is good [1]. Beta works [2] and gamma [3].
## Methods
Delta is here [4]. Missing [9]. Multi [1, 2].
## References
[1] Alpha Networks
[2] Beta Learning
[3] Gamma Graphs
[4] Unknown Paper Title
"""


def make_corpus(tmp_path: Path) -> Corpus:
    return Corpus.from_docs(DOCS, tmp_path / "corpus")


class FakeNLI:
    """Probabilities chosen by the cited paper named in the pair (contradiction, entailment, neutral)."""

    name = "fake-nli"
    revision = None

    def __init__(self):
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs):
        self.calls.append(list(pairs))
        out = []
        for a, b in pairs:
            m = re.search(r"Title: '([^']*)'", a + " " + b)
            text = m.group(1) if m else ""
            if "Alpha" in text:
                out.append([0.1, 0.8, 0.1])  # entailment
            elif "Beta" in text:
                out.append([0.2, 0.3, 0.5])  # neutral, p_ent > p_con
            elif "Gamma" in text:
                out.append([0.3, 0.2, 0.5])  # neutral, p_ent < p_con
            else:
                out.append([0.7, 0.2, 0.1])  # contradiction
        return np.asarray(out)
