"""`surge build --harvest`: a harvest folder becomes the same three Hub datasets as the release."""

import json

import datasets
from click.testing import CliRunner

from surge_datasets import Corpus
from surge_datasets.cli import main
from surge_datasets.harvest.snapshot import import_snapshot
from surge_datasets.schemas import PrefixTitle, Query, Section, Survey


def _snapshot_line(arxiv_id, title, versions=("v1",), categories="cs.LG stat.ML"):
    return json.dumps({
        "id": arxiv_id, "submitter": "A", "authors": "A. One and B. Two", "title": title, "comments": None,
        "journal-ref": None, "doi": None, "report-no": None, "categories": categories, "license": None,
        "abstract": "  An abstract\nwith a hard break.\n", "update_date": "2020-05-01",
        "versions": [{"version": v, "created": "Mon, 2 Apr 2018 12:00:00 GMT"} for v in versions],
        "authors_parsed": [["One", "A.", ""], ["Two", "B.", ""]],
    })


def test_build_from_a_harvest_folder(tmp_path):
    snap = tmp_path / "snapshot.json"
    snap.write_text("\n".join([
        _snapshot_line("1804.00001", "Deep Learning for Poincar\\'e  Maps", versions=("v1", "v2")),
        _snapshot_line("1804.00002", "Graph Networks"),
        _snapshot_line("math/0309136", "An Old Style Paper", categories="math.GT"),
    ]) + "\n")
    harvest = tmp_path / "harvest"
    import_snapshot(snap, harvest, workers=1)
    survey = Survey(survey_id=0, title="A Survey of Graphs", year=2021, structure=[
        Section(id="0", title="root"), Section(id="1", parent_id="0", level=1, title="Intro", content="x" * 120, cites=[0, 1]),
    ], all_cites=[0, 1], source="harvest")
    queries = [Query(query_id=i, original_id="0:1", survey_id=0, content="x", cites=[0],
                     prefix_titles=[PrefixTitle(level="title", title="A Survey of Graphs")]) for i in range(5)]
    (harvest / "surveys").mkdir(parents=True, exist_ok=True)
    (harvest / "surveys" / "surveys.jsonl").write_text(survey.model_dump_json() + "\n")
    (harvest / "surveys" / "queries.jsonl").write_text("".join(q.model_dump_json() + "\n" for q in queries))

    out = tmp_path / "build"
    result = CliRunner().invoke(main, ["build", "--harvest", str(harvest), "--out", str(out)])
    assert result.exit_code == 0, result.output
    corpus = datasets.load_dataset(str(out / "corpus"), split="train")
    assert sorted(corpus["arxiv_id"]) == ["1804.00001", "1804.00002", "math/0309136"]
    c = Corpus.open(out / "corpus")
    doc = c.by_arxiv_id("1804.00001v2")
    assert doc.arxiv_version == 2 and doc.source == "snapshot" and doc.categories == ["cs.LG", "stat.ML"]
    assert doc.title == "Deep Learning for Poincaré  Maps"
    assert c.by_title("Deep Learning for Poincar\\'e  Maps").doc_id == doc.doc_id  # the release's (raw) form
    assert datasets.load_dataset(str(out / "surveys"), split="test")[0]["all_cites"] == [0, 1]
    q = datasets.load_dataset(str(out / "queries"))
    assert q["train"].num_rows + q["test"].num_rows == 5 and q["test"].num_rows == 1
