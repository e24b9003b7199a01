"""The retrieval commands end to end on the toy benchmark: index, train, retrieve, evaluate."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from surge_datasets.cli import main
from surge_datasets.retrieval.documents import iter_text_batches, open_corpus
from surge_datasets.retrieval.testing import build_tiny_roberta, build_toy_benchmark


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    paths = build_toy_benchmark(root / "build")
    paths["root"] = root
    return paths


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_help_has_examples():
    for cmd in (["index", "bm25"], ["index", "dense"], ["train-retriever"], ["retrieve"], ["eval-retrieval"]):
        assert "Example:" in invoke(*cmd, "--help")


def test_bm25_index_retrieve_evaluate(toy):
    root = toy["root"]
    out = json.loads(invoke("index", "bm25", "--corpus", toy["corpus"], "--out", root / "bm25", "--json"))
    assert out["corpus"]["n_docs"] == 60
    invoke("retrieve", "--index", root / "bm25", "--topics", root / "build", "--k", 5, "--out", root / "runs" / "bm25.jsonl")
    lines = [json.loads(line) for line in (root / "runs" / "bm25.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and lines[0]["topic_id"] == "0" and lines[0]["tag"] == "bm25" and len(lines[0]["hits"]) == 5
    assert all(h["doc_id"] // 100 == 10 for h in lines[0]["hits"])  # the graph survey finds graph papers
    report = json.loads(invoke("eval-retrieval", root / "runs" / "bm25.jsonl", "--qrels", toy["surveys"], "--ks", "5,100",
                               "--json", "--out", root / "r.json"))
    assert report["topics"] == 6 and 0.3 < report["mean"]["R@5"] <= 5 / 8 and report["mean"]["R@100"] == report["mean"]["R@5"]  # the run holds 5 per topic
    assert set(json.loads((root / "r.json").read_text())["per_topic"]) == {str(i) for i in range(6)}
    # queries of the test split, TREC format
    invoke("retrieve", "--index", root / "bm25", "--topics", toy["queries"], "--split", "test", "--k", 10,
           "--out", root / "runs" / "q.trec", "--trec")
    first = (root / "runs" / "q.trec").read_text().splitlines()[0].split()
    assert first[0] == "1" and first[1] == "Q0" and first[3] == "1" and first[5] == "bm25"
    table = invoke("eval-retrieval", root / "runs" / "q.trec", "--qrels", toy["queries"], "--split", "test")
    assert "R@1000" in table and table.splitlines()[-1].split()[0] == "6"


def test_bad_input_is_a_clear_error(toy, tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 5\n")
    result = CliRunner().invoke(main, ["eval-retrieval", str(bad), "--qrels", str(toy["surveys"])])
    assert result.exit_code != 0 and "bad.trec: line 1" in result.output
    result = CliRunner().invoke(main, ["retrieve", "--index", str(tmp_path), "--topics", str(toy["surveys"]), "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "manifest.json" in result.output


@pytest.mark.slow
def test_dense_pipeline(toy):
    root = toy["root"]
    corpus = open_corpus(toy["corpus"])
    tiny = build_tiny_roberta(root / "tiny", [t for _, b in iter_text_batches(corpus) for t in b])
    summary = json.loads(invoke("train-retriever", "--queries", toy["queries"], "--corpus", toy["corpus"], "--out", root / "pr",
                                "--model", tiny, "--epochs", 1, "--lr", "1e-3", "--batch-size", 8, "--negatives", 3,
                                "--max-steps", 4, "--doc-max-length", 48, "--json"))
    assert summary["steps"] == 4 and summary["pairs"] == 72
    built = json.loads(invoke("index", "dense", "--model", root / "pr", "--corpus", toy["corpus"], "--out", root / "dense",
                              "--shard-size", 25, "--index", "hnsw", "--json"))
    assert built["n_shards"] == 3 and built["index"]["type"] == "hnsw" and "recall_vs_exact@60" in built["index"]
    invoke("retrieve", "--index", root / "dense", "--topics", toy["surveys"], "--k", 20, "--out", root / "runs" / "pr.jsonl")
    report = json.loads(invoke("eval-retrieval", root / "runs" / "pr.jsonl", "--qrels", toy["surveys"], "--json"))
    assert report["topics"] == 6 and report["mean"]["R@20"] > 0


def test_module_entry_points():
    for module in ("surge_datasets.retrieval.train", "surge_datasets.retrieval.encode"):
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "--corpus" in proc.stdout, proc.stderr
