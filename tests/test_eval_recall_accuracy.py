"""Recall and citation accuracy on a hand-computed example, in both modes.

The example (eval_fixtures.EXAMPLE_MD) cites, under 'Intro': [1] 'Alpha is good', [2] and [3] 'Beta works
and gamma'; under 'Methods': [4] (reference entry not in the corpus), [9] (no entry), [1, 2]. The
reference list resolves 1->doc 1, 2->doc 2, 3->doc 3, 4->unresolved. GT all_cites = [2, 7, 2].
The fake NLI answers: Alpha -> entailment, Beta -> neutral with p_ent > p_con, Gamma -> neutral with
p_ent < p_con, anything else -> contradiction.
"""

from __future__ import annotations

import pytest

from surge_datasets.citations import resolve_references
from surge_datasets.evaluation.citation_accuracy import citation_accuracy, citation_score, plan_citation_accuracy
from surge_datasets.evaluation.recall import citation_recall
from surge_datasets.generated import parse_markdown

from eval_fixtures import EXAMPLE_MD, GT, FakeNLI, make_corpus


@pytest.fixture
def corpus(tmp_path):
    return make_corpus(tmp_path)


def test_citation_score_rules():
    assert citation_score(0.1, 0.8, 0.1) == 1.0
    assert citation_score(0.2, 0.3, 0.5, "reference") == 0.5
    assert citation_score(0.3, 0.2, 0.5, "reference") == 0.0  # neutral, but p_ent < p_con
    assert citation_score(0.3, 0.2, 0.5, "paper") == 0.5
    assert citation_score(0.7, 0.2, 0.1, "paper") == 0.0
    assert citation_score(0.4, 0.4, 0.2) == 0.0  # ties are no argmax
    assert citation_score(-1.0, 2.0, 0.5) == 1.0  # logits work too


def test_recall_modes(corpus):
    g = parse_markdown(EXAMPLE_MD, mode="reference")
    ids = [r.doc_id for r in resolve_references(g, corpus, "reference").values()]
    # reference: each entry of the GT list counts: 2 (hit), 7 (miss), 2 (hit)
    assert citation_recall(GT.all_cites, ids, "reference") == pytest.approx(2 / 3)
    # paper: sets, {2, 7} & {1, 2, 3}
    assert citation_recall(GT.all_cites, ids, "paper") == pytest.approx(1 / 2)
    assert citation_recall([], ids, "reference") is None
    assert citation_recall([5], [], "paper") == 0.0


def test_accuracy_reference_mode(corpus):
    g = parse_markdown(EXAMPLE_MD, mode="reference")
    nli = FakeNLI()
    r = citation_accuracy(g, GT, corpus, nli, "reference")
    # document: ref1 Alpha 1, ref2 in GT 1, ref3 Gamma 0, ref4 unresolved 0 -> 2/4
    assert r["citation_accuracy_document"] == pytest.approx(0.5)
    # section/sentence: Intro [1] 1, [2] .5, [3] 0; Methods [4] 0, [9] 0 ('[1, 2]' is not read);
    # the reference list lines under 'References' are read as citations too: [1] 1, [2] .5, [3] 0, [4] 0 -> 3/9
    assert r["citation_accuracy_section"] == pytest.approx(3 / 9)
    assert r["citation_accuracy_sentence"] == pytest.approx(3 / 9)
    (pairs,) = nli.calls
    doc_pairs = [p for p in pairs if "could be cited in the paper" in p[1]]
    # document level keeps (paper, hypothesis) and quotes the abstract
    assert doc_pairs[0] == ("There is a paper. Title: 'Alpha Networks'. Abstract: 'About alpha.'",
                            "The paper titled 'Alpha Networks' with the given abstract could be cited in the paper: 'Survey of Things'.")
    sec = [p for p in pairs if "relevant to the section" in p[0]]
    # swapped: (hypothesis, paper)
    assert sec[0] == ("The paper titled 'Alpha Networks' with the given abstract is relevant to the section: 'Intro'.",
                      "There is a paper. Title: 'Alpha Networks'. Abstract: About alpha.")
    sent = [p for p in pairs if "could be cited in the sentence" in p[0]]
    assert sent[0][0].endswith("in the sentence: 'Alpha is good [1]'.")


def test_accuracy_paper_mode(corpus):
    g = parse_markdown(EXAMPLE_MD, mode="paper")
    nli = FakeNLI()
    r = citation_accuracy(g, GT, corpus, nli, "paper")
    # document: 1 + 1 + 0.5 (Gamma neutral) + 0 -> 2.5/4
    assert r["citation_accuracy_document"] == pytest.approx(0.625)
    # instances: [1] 1, [2] .5, [3] .5, [4] 0, [9] 0, [1] 1, [2] .5 -> 3.5/7 (the reference list is not read)
    assert r["citation_accuracy_section"] == pytest.approx(0.5)
    assert r["citation_accuracy_sentence"] == pytest.approx(0.5)
    (pairs,) = nli.calls
    assert all(p[0].startswith("There is a paper.") for p in pairs)  # (paper, hypothesis) everywhere


def test_no_references_no_citations(corpus):
    g = parse_markdown("# S\n## A\nno citations here\n", mode="reference")
    r = citation_accuracy(g, GT, corpus, FakeNLI(), "reference")
    assert r == {"citation_accuracy_document": 0.0, "citation_accuracy_section": 0.0, "citation_accuracy_sentence": 0.0}
    p = parse_markdown("# S\n## A\nno citations here\n", mode="paper")
    r = citation_accuracy(p, GT, corpus, FakeNLI(), "paper")
    assert r == {"citation_accuracy_document": None, "citation_accuracy_section": None, "citation_accuracy_sentence": None}


def test_all_unresolved_scores_zero_without_model(corpus):
    g = parse_markdown("# S\n## A\nx [1] y [2]\n## References\n[1] Nope One\n", mode="paper")
    nli = FakeNLI()
    r = citation_accuracy(g, GT, corpus, nli, "paper")
    assert r == {"citation_accuracy_document": 0.0, "citation_accuracy_section": 0.0, "citation_accuracy_sentence": 0.0}
    assert nli.calls == []


def test_plan_deduplicates_pairs(corpus):
    md = "# S\n## A\nAlpha [1]. Alpha [1].\n## References\n[1] Alpha Networks\n"
    plan = plan_citation_accuracy(parse_markdown(md, mode="paper"), GT, corpus, mode="paper")
    assert plan.counts()["n_section"] == 2
    assert len(plan.pairs) == 1 + 1 + 1  # document, section (same heading twice), sentence (same sentence twice)
