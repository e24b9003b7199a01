import pytest

from surge_datasets.identifiers import ArxivId, find_arxiv_ids, normalize_doi, parse_arxiv_id, title_key


@pytest.mark.parametrize("title,key", [
    ("Attention Is  All You Need", "attentionisallyouneed"),
    ("BERT: Pre-training of Deep\n  Bidirectional Transformers", "bertpretrainingofdeepbidirectionaltransformers"),
    ("Café — ünïcode 2.0 & GPT-4", "cafncodegpt"),  # non-ASCII letters and digits are dropped, as in the paper
    ("", ""),
])
def test_title_key_is_the_papers_rule(title, key):
    assert title_key(title) == key


@pytest.mark.parametrize("text,expected", [
    ("2106.12135", ArxivId("2106.12135", None)),
    ("2106.12135v2", ArxivId("2106.12135", 2)),
    ("arXiv:0808.05394v1", ArxivId("0808.05394", 1)),
    ("https://arxiv.org/abs/1707.08567v3", ArxivId("1707.08567", 3)),
    ("http://arxiv.org/pdf/2104.12255v1.pdf", ArxivId("2104.12255", 1)),
    ("hep-th/9901001v2", ArxivId("hep-th/9901001", 2)),
    ("solv-int/9901001", ArxivId("solv-int/9901001", None)),  # contains a 'v': never split('v')
    ("math.GT/0309136", ArxivId("math/0309136", None)),
    ("quant-ph/0201082v1", ArxivId("quant-ph/0201082", 1)),
    ("abc", None), ("0000.0000x", None), ("", None),
])
def test_parse_arxiv_id(text, expected):
    assert parse_arxiv_id(text) == expected


def test_find_arxiv_ids_in_a_reference_line():
    line = "[3] A. B. Title. arXiv:2106.12135v2, see also https://arxiv.org/abs/hep-th/9901001"
    assert [str(a) for a in find_arxiv_ids(line)] == ["2106.12135v2", "hep-th/9901001"]


def test_normalize_doi():
    assert normalize_doi("https://doi.org/10.1145/3397271.3401075.") == "10.1145/3397271.3401075"
    assert normalize_doi("DOI: 10.1109/ACCESS.2020.ABC") == "10.1109/access.2020.abc"
    assert normalize_doi("no doi here") is None
