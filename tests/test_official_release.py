"""Import of the paper's release files: streaming, exact export, bad records, atomic builds."""

import json
import os

import datasets
import pytest
from click.testing import CliRunner

from surge_datasets.build import build
from surge_datasets.cli import main
from surge_datasets.data import SurgeData, load_queries, load_surveys
from surge_datasets.official import export_record, iter_official
from surge_datasets.schemas import RecordError


def _read(folder, name):
    return json.loads((folder / f"{name}.json").read_text())


def test_build_then_load_dataset_offline(tiny_release, tmp_path):
    report = build(tiny_release, tmp_path / "build")
    assert report.counts == {"corpus": {"train": 3}, "surveys": {"test": 1}, "queries": {"train": 4, "test": 1}}
    corpus = datasets.load_dataset(str(tmp_path / "build" / "corpus"), split="train")
    assert corpus.num_rows == 3 and corpus[0]["doc_id"] == 10 and corpus[0]["title"] == "Attention Is  All You Need"
    assert corpus.features["categories"] == datasets.List(datasets.Value("string"))
    q = datasets.load_dataset(str(tmp_path / "build" / "queries"))
    assert set(q) == {"train", "test"} and sorted(list(q["train"]["split"]) + list(q["test"]["split"])) == ["test"] + ["train"] * 4
    assert all(s == 7 for s in list(q["train"]["survey_id"]))  # linked to the GT survey through prefix_titles
    surveys = datasets.load_dataset(str(tmp_path / "build" / "surveys"), split="test")
    struct = surveys[0]["structure"]
    assert [s["level"] for s in struct] == [0, 1, 2, 1] and struct[2]["cites"] == [10, 11]


def test_card_declares_configs_features_splits_and_stats(tiny_release, tmp_path):
    from huggingface_hub import DatasetCard

    build(tiny_release, tmp_path / "b", org="myorg")
    card = DatasetCard.load(tmp_path / "b" / "surveys" / "README.md")
    assert card.data.license == "mit" and card.data.pretty_name == "SurGE ground-truth surveys"
    assert card.data.configs == [{"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*.parquet"}]}]
    (split,) = card.data.dataset_info["splits"]
    assert split["name"] == "test" and split["num_examples"] == 1 and split["num_bytes"] > 0
    assert card.data.dataset_info["download_size"] == (tmp_path / "b" / "surveys" / "data" / "test-00000-of-00001.parquet").stat().st_size
    assert "| mean / max tree depth | 2.000 / 2 |" in card.text  # levels 0,1,2,1 -> depth 2; one survey
    assert "| mean / max nodes | 4.000 / 4 |" in card.text
    assert 'load_dataset("myorg/surveys"' in card.text and "@inproceedings{surge2026" in card.text
    corpus_card = DatasetCard.load(tmp_path / "b" / "corpus" / "README.md")
    assert corpus_card.data.license == "cc0-1.0" and "| documents | 3 |" in corpus_card.text


def test_export_gives_back_equal_records(tiny_release, tmp_path):
    build(tiny_release, tmp_path / "build")
    result = CliRunner().invoke(main, ["export", "--official", "--data", str(tmp_path / "build"), "--out", str(tmp_path / "rt")])
    assert result.exit_code == 0, result.output
    for name, key in (("corpus", "doc_id"), ("surveys", "survey_id"), ("queries", "query_id")):
        original = sorted(_read(tiny_release, name), key=lambda r: r[key])
        exported = sorted(_read(tmp_path / "rt", name), key=lambda r: r[key])
        assert exported == original, name
        assert [list(r) for r in exported] == [list(r) for r in original]  # key order too


def test_unknown_release_fields_survive_the_round_trip(tiny_release, tmp_path):
    surveys = _read(tiny_release, "surveys")
    surveys[0]["new_field"] = {"nested": [1, 2]}
    surveys[0]["structure"][1]["level_name"] = "section"
    surveys[0]["survey_id"] = "7"  # a string id in the release stays a string on export
    (tiny_release / "surveys.json").write_text(json.dumps(surveys))
    (s,) = iter_official("surveys", tiny_release / "surveys.json")
    assert s.survey_id == 7
    assert export_record(s) == surveys[0]


def test_bad_record_error_names_index_and_field(tiny_release, tmp_path):
    corpus = _read(tiny_release, "corpus")
    corpus[1]["doc_id"] = "eleven"
    (tiny_release / "corpus.json").write_text(json.dumps(corpus))
    with pytest.raises(RecordError) as err:
        build(tiny_release, tmp_path / "out")
    assert err.value.index == 1 and err.value.field == "doc_id"
    assert str(tiny_release / "corpus.json") in str(err.value)
    result = CliRunner().invoke(main, ["build", "--official", str(tiny_release), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "record 1: field 'doc_id'" in result.output and "--skip-invalid" in result.output


def test_skip_invalid_writes_rejects(tiny_release, tmp_path):
    corpus = _read(tiny_release, "corpus")
    corpus.append({"Title": None, "doc_id": 99})
    corpus.append({"Title": "ok", "Year": "20x9", "doc_id": 98})
    (tiny_release / "corpus.json").write_text(json.dumps(corpus))
    report = build(tiny_release, tmp_path / "out", skip_invalid=True)
    assert report.counts["corpus"] == {"train": 3} and report.rejects == {"corpus": 2}
    rejects = [json.loads(line) for line in (tmp_path / "out" / "rejects" / "corpus.jsonl").read_text().splitlines()]
    assert [(r["index"], r["field"]) for r in rejects] == [(3, "Title"), (4, "Year")]
    assert rejects[1]["record"]["doc_id"] == 98


def test_interrupted_build_keeps_previous_output(tiny_release, tmp_path):
    out = tmp_path / "out"
    build(tiny_release, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (tiny_release / "queries.json").write_text('[{"query_id": 1, "original_id": "x", "cites": [1]}, {"query_id": ')  # truncated
    with pytest.raises(ValueError, match="queries.json: invalid JSON"):
        build(tiny_release, out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert not [p for p in os.listdir(out) if p.startswith(".")]  # no temp folders left


def test_duplicate_doc_id_is_refused(tiny_release, tmp_path):
    corpus = _read(tiny_release, "corpus")
    corpus[2]["doc_id"] = 10
    (tiny_release / "corpus.json").write_text(json.dumps(corpus))
    with pytest.raises(ValueError, match="doc_id 10 appears more than once"):
        build(tiny_release, tmp_path / "out")


def test_surge_data_and_loaders(tiny_release, tmp_path):
    build(tiny_release, tmp_path / "b")
    data = SurgeData.open(tmp_path / "b")
    assert len(data.corpus) == 3 and list(data.surveys) == [7] and len(data.queries) == 5
    assert [q.query_id for q in load_queries(tmp_path / "b", split="test")] == [q.query_id for q in data.queries if q.split == "test"]
    assert load_surveys(tmp_path / "b" / "surveys")[7].title == "A Survey of Transformers"
    with pytest.raises(FileNotFoundError, match="not a build folder"):
        SurgeData.open(tmp_path)


def test_two_builds_never_share_a_datasets_cache(tiny_release, tmp_path):
    """datasets keys a local folder's cache on the card's YAML; the card's sizes keep two builds apart."""
    build(tiny_release, tmp_path / "one", names=("corpus",))
    corpus = _read(tiny_release, "corpus")
    for d in corpus:
        d["Abstract"] += " Revised."
    (tiny_release / "corpus.json").write_text(json.dumps(corpus))
    build(tiny_release, tmp_path / "two", names=("corpus",))
    one = datasets.load_dataset(str(tmp_path / "one" / "corpus"), split="train")
    two = datasets.load_dataset(str(tmp_path / "two" / "corpus"), split="train")
    assert not one[0]["abstract"].endswith("Revised.") and two[0]["abstract"].endswith("Revised.")
