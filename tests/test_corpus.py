import time

import pytest

from surge_datasets import Corpus, CorpusDoc
from surge_datasets.build import build


@pytest.fixture
def corpus(tmp_path):
    docs = [
        CorpusDoc(doc_id=5, title="Attention Is  All You Need", arxiv_id="1706.03762", arxiv_version=7, abstract="a"),
        CorpusDoc(doc_id=2, title="BERT: Pre-training", arxiv_id="hep-th/9901001", doi="10.18653/v1/N19-1423"),
        CorpusDoc(doc_id=9, title="attention is all you need!!", source="api"),
        CorpusDoc(doc_id=1, title="12345"),  # a title with no letters never matches
    ]
    return Corpus.from_docs(docs, tmp_path / "corpus")


def test_lookups(corpus):
    assert len(corpus) == 4 and 9 in corpus and 3 not in corpus and "5" not in corpus
    assert corpus.get(2).title == "BERT: Pre-training"
    assert corpus.by_doc_id(3) is None
    with pytest.raises(KeyError, match="doc_id 3"):
        corpus.get(3)
    assert [d.doc_id for d in corpus.get_many([9, 5, 2])] == [9, 5, 2]
    assert corpus.by_arxiv_id("https://arxiv.org/abs/1706.03762v2").doc_id == 5
    assert corpus.by_arxiv_id("hep-th/9901001v3").doc_id == 2
    assert corpus.by_arxiv_id("1706.03763") is None and corpus.by_arxiv_id("garbage") is None
    assert corpus.by_doi("https://doi.org/10.18653/V1/N19-1423").doc_id == 2
    assert corpus.texts([5]) == ["Attention Is  All You Need a"]


def test_title_lookup_follows_the_papers_dict(corpus):
    # two docs share the key 'attentionisallyouneed': the later one in corpus order wins, as with a dict
    assert corpus.by_title("ATTENTION is all you need").doc_id == 9
    assert corpus.doc_ids_by_titles(["bert pre-training", "Attention is all you need", "nothing", "", "123"]) == [2, 9, None, None, None]
    assert [d.doc_id if d else None for d in corpus.by_titles(["BERT: pre training", "x"])] == [2, None]


def test_iteration_keeps_corpus_order(corpus):
    assert [d.doc_id for d in corpus] == [5, 2, 9, 1]


def test_open_forms(tiny_release, tmp_path):
    # the official corpus.json, streamed into a cached store
    c = Corpus.open(tiny_release / "corpus.json", cache_dir=tmp_path / "cache")
    assert len(c) == 3 and c.by_title("attention is all you need").doc_id == 12
    again = Corpus.open(tiny_release / "corpus.json", cache_dir=tmp_path / "cache")
    assert again.path == c.path
    # a build folder, and a dataset folder that has shards but no store yet (e.g. a Hub snapshot)
    build(tiny_release, tmp_path / "b", names=("corpus",))
    assert len(Corpus.open(tmp_path / "b" / "corpus")) == 3
    import shutil
    shutil.rmtree(tmp_path / "b" / "corpus" / "store")
    assert Corpus.open(tmp_path / "b" / "corpus").get(11).authors == ["Jacob Devlin"]
    with pytest.raises(FileNotFoundError, match="no corpus here"):
        Corpus.open(tmp_path)


def test_hub_repo_id_goes_through_the_datasets_cache(tiny_release, tmp_path, monkeypatch):
    """A Hub id is loaded with datasets.load_dataset; here the 'Hub' answer is the local build."""
    import datasets

    build(tiny_release, tmp_path / "b", names=("corpus",))
    calls = []
    real = datasets.load_dataset

    def fake_load(repo_id, split=None, revision=None, **kw):
        calls.append((repo_id, split, revision))
        return real(str(tmp_path / "b" / "corpus"), split=split)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    c = Corpus.open("surge/corpus", revision="v1", cache_dir=tmp_path / "cache")
    assert calls == [("surge/corpus", "train", "v1")] and len(c) == 3
    assert c.by_title("BERT: pre-training of deep bidirectional transformers").doc_id == 11


def test_open_is_fast_once_built(corpus):
    t = time.perf_counter()
    for _ in range(20):
        Corpus(corpus.path)
    assert time.perf_counter() - t < 5  # generous: the benchmark measures the real figure


def test_harvested_titles_match_on_their_raw_latex_form(tmp_path):
    """The release keeps arXiv's LaTeX in titles; a harvested doc shows Unicode but matches on title_raw."""
    doc = CorpusDoc(doc_id=1, title="Sur le problème de Poincaré", title_raw="Sur le probl\\`eme de Poincar\\'e", source="oai")
    c = Corpus.from_docs([doc, CorpusDoc(doc_id=2, title="Plain")], tmp_path / "c")
    assert c.by_title("Sur le probl\\`eme de Poincar\\'e").doc_id == 1  # the release's form
    assert c.by_title("Plain").doc_id == 2
