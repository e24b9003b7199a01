"""Recall@k computed by hand, run files in both formats, qrels from every source."""

from __future__ import annotations

import json

import pytest

from surge_datasets.retrieval.recall import PAPER_KS, evaluate_run, format_table, load_qrels, recall_at_k
from surge_datasets.retrieval.search import RunFormatError, read_run, write_run


def test_recall_at_k_by_hand():
    ranked = [5, 1, 9, 2, 7, 3]
    relevant = {1, 2, 3, 4}
    assert recall_at_k(ranked, relevant, 1) == 0.0
    assert recall_at_k(ranked, relevant, 2) == 0.25  # finds 1
    assert recall_at_k(ranked, relevant, 4) == 0.5  # 1, 2
    assert recall_at_k(ranked, relevant, 6) == 0.75  # 1, 2, 3; 4 never retrieved
    assert recall_at_k(ranked, relevant, 1000) == 0.75
    assert recall_at_k(ranked, [1, 1, 2, 3, 4], 2) == 0.25  # duplicates in qrels count once
    with pytest.raises(ValueError):
        recall_at_k(ranked, [], 10)


def test_evaluate_run_averages_over_topics():
    run = {"a": [(1, 9.0), (2, 8.0), (3, 7.0)], "b": [(10, 1.0), (11, 0.5)], "x": [(1, 1.0)]}
    qrels = {"a": frozenset({1, 3}), "b": frozenset({11, 12, 13, 14}), "c": frozenset({5}), "d": frozenset()}
    r = evaluate_run(run, qrels, ks=(1, 2, 3))
    # a: R@1 1/2, R@2 1/2, R@3 1; b: 0, 1/4, 1/4; c (not in run): 0, 0, 0; d skipped (no qrels)
    assert r.per_topic["a"] == {"R@1": 0.5, "R@2": 0.5, "R@3": 1.0}
    assert r.per_topic["b"] == {"R@1": 0.0, "R@2": 0.25, "R@3": 0.25}
    assert r.mean["R@1"] == pytest.approx(0.5 / 3)
    assert r.mean["R@2"] == pytest.approx(0.75 / 3)
    assert r.mean["R@3"] == pytest.approx(1.25 / 3)
    assert r.topics == 3 and r.skipped_no_qrels == ["d"] and r.missing_from_run == ["c"] and r.unjudged_in_run == 1
    assert "R@3" in format_table(r) and "0.4167" in format_table(r)
    assert PAPER_KS == (20, 30, 100, 200, 500, 1000)


@pytest.mark.parametrize("trec", [False, True])
def test_run_files_round_trip(tmp_path, trec):
    run = {"7": [(12, 3.5), (4, 2.25), (99, 0.125)], "8": [(1, 1.0)]}
    path = write_run(tmp_path / ("r.trec" if trec else "r.jsonl"), run, tag="bm25", trec=trec, queries={"7": "graph nets"})
    text = path.read_text()
    if trec:
        assert text.splitlines()[0] == "7 Q0 12 1 3.500000 bm25"
    else:
        first = json.loads(text.splitlines()[0])
        assert first["query"] == "graph nets" and first["hits"][1] == {"doc_id": 4, "rank": 2, "score": 2.25}
    assert read_run(path) == run


def test_bad_run_lines_name_file_and_line(tmp_path):
    p = tmp_path / "bad.trec"
    p.write_text("1 Q0 5 1 2.0 x\n1 Q0 6 2\n")
    with pytest.raises(RunFormatError, match=r"bad.trec: line 2"):
        read_run(p)
    p = tmp_path / "bad.jsonl"
    p.write_text('{"topic_id": 1, "hits": []}\n{"hits": [}\n')
    with pytest.raises(RunFormatError, match=r"line 2"):
        read_run(p)


def test_qrels_from_trec_and_json(tmp_path):
    q = tmp_path / "qrels.txt"
    q.write_text("1 0 5 1\n1 0 6 0\n2 0 7 2\n")
    assert load_qrels(q) == {"1": frozenset({5}), "2": frozenset({7})}
    j = tmp_path / "qrels.json"
    j.write_text(json.dumps({"1": [5, 6], "2": []}))
    assert load_qrels(j) == {"1": frozenset({5, 6}), "2": frozenset()}
