"""Resolving references: arXiv id, then DOI, then the paper's title key; fuzzy titles in paper mode."""

from __future__ import annotations

from surge_datasets.citations import resolution_summary, resolve_references
from surge_datasets.generated import Reference, parse_markdown

from eval_fixtures import make_corpus


def test_order_of_evidence(tmp_path):
    corpus = make_corpus(tmp_path)
    refs = {
        "1": Reference("1", title="Wrong Title", arxiv_id="2101.00001"),  # arXiv id wins over the title
        "2": Reference("2", title="Nothing Like It", doi="10.1000/BETA"),
        "3": Reference("3", title="gamma   GRAPHS!"),
        "4": Reference("4", title="epsilon a study"),  # two docs share the key: the later one wins
        "5": Reference("5", title="Not In The Corpus"),
        "6": Reference("6", arxiv_id="2999.99999", title="Delta-Models"),  # unknown id, then the title
        "7": Reference("7"),
    }
    res = resolve_references(refs, corpus, "reference")
    assert [(n, r.doc_id, r.method) for n, r in res.items()] == [
        ("1", 1, "arxiv_id"), ("2", 2, "doi"), ("3", 3, "title"), ("4", 6, "title"),
        ("5", None, None), ("6", 4, "title"), ("7", None, None),
    ]
    assert resolution_summary(res) == {"arxiv_id": 1, "doi": 1, "title": 3, "fuzzy_title": 0, "unresolved": 2, "total": 7}


def test_fuzzy_only_in_paper_mode(tmp_path):
    corpus = make_corpus(tmp_path)
    refs = {"1": Reference("1", title="Zeta Transformer for Long Document"),  # near miss
            "2": Reference("2", title="Completely Different Words Here")}
    ref = resolve_references(refs, corpus, "reference")
    assert not ref["1"].resolved and not ref["2"].resolved
    pap = resolve_references(refs, corpus, "paper")
    assert pap["1"].doc_id == 7 and pap["1"].method == "fuzzy_title" and 0.9 <= pap["1"].score < 1
    assert not pap["2"].resolved
    strict = resolve_references(refs, corpus, "paper", fuzzy_threshold=0.99)
    assert not strict["1"].resolved


def test_markdown_references_in_reference_mode_use_the_title_only(tmp_path):
    corpus = make_corpus(tmp_path)
    md = "# S\n## A\nx [1]\n## References\n[1] Someone. (n.d.). *Alpha Networks*. arXiv:2101.00002\n"
    g = parse_markdown(md, mode="reference")
    # the paper's regex keeps the tail '. arXiv:2101.00002' as the title: unresolved
    assert g.references["1"].title == ". arXiv:2101.00002"
    assert not resolve_references(g, corpus, "reference")["1"].resolved
    p = parse_markdown(md, mode="paper")
    assert p.references["1"].title == "Alpha Networks"
    res = resolve_references(p, corpus, "paper")["1"]
    assert (res.doc_id, res.method) == (2, "arxiv_id")  # the arXiv id comes before the title
