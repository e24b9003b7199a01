"""GT surveys from titles and the corpus recipe, end to end through the CLI against the local server."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "harvest"))
import replay_server  # noqa: E402
from replay_server import make_entry  # noqa: E402

from surge_datasets.cli import main  # noqa: E402
from surge_datasets.harvest.arxiv_api import keyword_query, title_query  # noqa: E402
from surge_datasets.harvest.normalize import corpus_row, in_archive  # noqa: E402
from surge_datasets.harvest.recipe import title_keywords  # noqa: E402
from surge_datasets.harvest.store import (ShardStore, iter_harvested_corpus, iter_harvested_queries,  # noqa: E402
                                          iter_harvested_surveys)

FIX = Path(__file__).parent / "fixtures" / "harvest"
TITLES = "title\tyear\tcategory\tcitation_count_2025_05_10\n" \
         "A Survey of Software Testing\t2021\tcs.SE\t10\n" \
         "Graph Learning: A Survey\t2020\tcs.LG\t5\n" \
         "Nothing To Find Here At All\t2022\tcs.CL\t1\n" \
         "Old Survey of Things\t2021\tcs.AI\t3\n"


def eprint_tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for p in sorted((FIX / "latex_survey").rglob("*")):
            if p.is_file():
                tf.add(p, arcname=str(p.relative_to(FIX / "latex_survey")))
    return buf.getvalue()


@pytest.fixture
def server():
    srv = replay_server.start_server()
    st = srv.state
    st.searches[title_query("A Survey of Software Testing")] = [
        make_entry("1501.00001", "A Survey of Software Testing Tools", published="2015-01-01T00:00:00Z"),
        make_entry("2101.99999", "A Survey of Software\n  Testing", published="2021-01-10T00:00:00Z", categories=("cs.SE",),
                   authors=("Ann One", "Bob Two")),
    ]
    st.searches[title_query("Graph Learning: A Survey")] = [
        make_entry("2002.00001", "Graph Learning: A Survey", published="2020-02-01T00:00:00Z"),
        make_entry("2002.00002", "Graph learning - a survey", published="2020-03-01T00:00:00Z"),
    ]
    st.searches[title_query("Old Survey of Things")] = [
        make_entry("1001.00001", "Old Survey of Things", published="2010-01-01T00:00:00Z")]
    st.eprints["2101.99999"] = eprint_tarball()
    for aid, title in [("1706.03762", "Attention Is All You Need"), ("2101.00003", "Some Paper"),
                       ("2101.00005", "Fuzzing Neural Networks"), ("2101.99999", "A Survey of Software Testing")]:
        st.entries[aid] = make_entry(aid, title, published="2021-01-01T00:00:00Z")
    st.searches[title_query("Coverage Criteria")] = [make_entry("1801.00001", "Coverage Criteria.")]
    st.searches[keyword_query(title_keywords("A Survey of Software Testing"))] = [
        make_entry(f"2102.{i:05d}", f"Testing paper {i}") for i in range(7)]
    yield srv
    srv.shutdown()
    srv.server_close()


def seed_corpus(folder: Path) -> None:
    def r(aid, title, doc_id):
        row = corpus_row(arxiv_id=aid, version=1, title=title, authors=[], abstract="", categories="cs.LG",
                         published="2020-01-01", updated=None, source="oai")
        row["doc_id"] = doc_id
        return row

    ShardStore.open(folder / "corpus" / "seed", {"seed": 1}).commit(
        [r("1706.03762", "Attention Is All You Need", 0), r("1810.04805", "BERT: Pre-training of Deep Bidirectional Transformers", 1),
         r("2001.11111", "Deep Learning for Software Testing: A Study", 2)], {"done": True}, done=True)


def run(args):
    res = CliRunner().invoke(main, args + ["--min-interval", "0.01"], catch_exceptions=False)
    return res


def surveys_args(server, h, tsv):
    return ["harvest", "surveys", "--titles", str(tsv), "--corpus", str(h), "--out", str(h / "surveys"),
            "--endpoint", server.api, "--eprint-endpoint", server.eprint]


@pytest.mark.slow
def test_surveys_then_recipe(server, tmp_path):
    h = tmp_path / "h"
    seed_corpus(h)
    tsv = tmp_path / "titles.tsv"
    tsv.write_text(TITLES)
    server.state.faults["eprint"].extend([("status", 503, {"Retry-After": "0"}), ("reset",)])
    res = run(surveys_args(server, h, tsv))
    assert res.exit_code == 0, res.output
    report = json.loads((h / "surveys" / "report.json").read_text())
    assert report["status"] == {"resolved": 1, "ambiguous": 1, "not-found": 1, "year-mismatch": 1}
    assert report["ambiguous"][0]["title"] == "Graph Learning: A Survey"
    assert {c["arxiv_id"] for c in report["ambiguous"][0]["candidates"]} == {"2002.00001", "2002.00002"}
    (survey,) = list(iter_harvested_surveys(h))
    assert survey.arxiv_id == "2101.99999" and survey.survey_id == 0 and survey.category == "cs.SE"
    assert survey.authors == ["Ann One", "Bob Two"] and survey.date == "2021-01-10T00:00:00Z"
    assert survey.all_cites == [0, 1, 2]  # arXiv id, title key (BERT via title), title key
    queries = list(iter_harvested_queries(h))
    assert queries and all(q.survey_id == 0 and q.cite_extract_rate >= 0.5 for q in queries)
    assert report["missing_keys"] == 2 and report["uncited_entries"] == 1
    n_requests = len(server.state.log)
    # a rerun resumes from the state: no new title searches or downloads
    res = run(surveys_args(server, h, tsv))
    assert res.exit_code == 0 and len(server.state.log) == n_requests

    # a pool to sample cs papers from
    from surge_datasets.harvest.snapshot import import_snapshot

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from bench_snapshot import write_synthetic

    write_synthetic(tmp_path / "snap.json", 300)
    import_snapshot(tmp_path / "snap.json", tmp_path / "pool", category="cs")

    recipe = ["harvest", "corpus", "--recipe", "surge", "--surveys", str(h / "surveys"), "--out", str(h),
              "--endpoint", server.api, "--sample-from", str(tmp_path / "pool"), "--sample-size", "5", "--seed", "1",
              "--max-results", "20"]
    # the first try dies on a server that keeps failing; the rerun resumes
    server.state.faults["api"].extend([None] * 3 + [("status", 503, {})] * 3)
    res = CliRunner().invoke(main, recipe + ["--min-interval", "0.01", "--retries", "1"])
    assert res.exit_code != 0 and "rerun the same command to resume" in res.output
    res = run(recipe)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    assert out["work_cited-ids"] == 5 and out["missing"] == 1  # 2101.00006 is not on the server
    assert out["title_hits"] == 1 and out["searches"] == 2
    docs = list(iter_harvested_corpus(h))
    by_id = {d.arxiv_id: d for d in docs}
    assert {"1706.03762", "2101.00003", "2101.00005", "2101.99999", "1801.00001"} <= set(by_id)
    assert {f"2102.{i:05d}" for i in range(7)} <= set(by_id)
    assert by_id["1706.03762"].doc_id == 0  # kept from the earlier harvest
    assert len({d.doc_id for d in docs}) == len(docs) == len(by_id)
    sampled = [d for d in docs if d.source == "snapshot"]
    assert len(sampled) == 5 and all(in_archive(d.categories, "cs") for d in sampled)
    # the same recipe in a fresh folder gives the same corpus
    h2 = tmp_path / "h2"
    seed_corpus(h2)
    import shutil

    shutil.copytree(h / "surveys", h2 / "surveys")
    res = run(recipe[:5] + [str(h2 / "surveys"), "--out", str(h2)] + recipe[8:])
    assert res.exit_code == 0, res.output
    clean = sorted((d.model_dump() for d in iter_harvested_corpus(h2)), key=lambda d: d["arxiv_id"])
    assert clean == sorted((d.model_dump() for d in docs), key=lambda d: d["arxiv_id"])


def test_api_ids_job_keeps_official_doc_ids(server, tmp_path):
    from surge_datasets.corpus import Corpus
    from surge_datasets.schemas import CorpusDoc

    Corpus.from_docs([CorpusDoc(doc_id=100, title="Heat-bath random walks with Markov bases"),
                     CorpusDoc(doc_id=250, title="Something else")], tmp_path / "release")
    ids = tmp_path / "ids.txt"
    ids.write_text("1605.08386\n1707.08567\nabc\n0000.0000\n")
    args = ["harvest", "corpus", "--source", "api", "--ids", str(ids), "--endpoint", server.api,
            "--official", str(tmp_path / "release"), "--out", str(tmp_path / "h")]
    res = run(args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    assert out["rows"] == 2 and out["missing_ids"] == ["0000.0000"] and out["invalid_ids"] == ["abc"]
    docs = {d.arxiv_id: d.doc_id for d in iter_harvested_corpus(tmp_path / "h")}
    assert docs == {"1605.08386": 100, "1707.08567": 251}  # release id kept by title key; new id above the max
