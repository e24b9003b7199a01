"""The evaluation runner: results files, resume, one NLI pass for all surveys, skipped metrics, errors, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from surge_datasets.evaluation.compare import write_comparison
from surge_datasets.evaluation.runner import EvalConfig, Models, evaluate_dir, parse_metrics

from eval_fixtures import EXAMPLE_MD, GT, FakeNLI, make_corpus


def _generated(tmp_path: Path) -> Path:
    root = tmp_path / "generated"
    for sid, text in {"0": EXAMPLE_MD, "5": EXAMPLE_MD.replace("Alpha is good", "Alpha is great")}.items():
        (root / sid).mkdir(parents=True)
        (root / sid / "survey.md").write_text(text)
    (root / "1").mkdir()
    (root / "1" / "bad.md").write_bytes(b"# x\n\xff\n")
    (root / "99").mkdir()
    (root / "99" / "s.md").write_text("# no GT for this id\n")
    return root


@pytest.fixture
def setup(tmp_path):
    gt5 = GT.model_copy(update={"survey_id": 5})
    return _generated(tmp_path), {0: GT, 5: gt5}, make_corpus(tmp_path)


def test_parse_metrics():
    assert parse_metrics("all")[0] == "recall"
    assert parse_metrics("recall, rouge") == ("recall", "rouge_bleu")
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metrics("recall,nope")


def test_run_resume_and_files(setup, tmp_path):
    gen_dir, surveys, corpus = setup
    out = tmp_path / "out"
    nli = FakeNLI()
    cfg = EvalConfig(metrics="recall,citation_accuracy,rouge_bleu")
    res = evaluate_dir(gen_dir, surveys, corpus, out, cfg, models=Models(nli=nli), progress=False)
    assert set(res) >= {"aggregate", "surveys", "config"}
    s0 = res["surveys"]["0"]
    assert s0["recall"] == pytest.approx(2 / 3)
    assert s0["citation_accuracy_document"] == pytest.approx(0.5)
    assert s0["citation_accuracy_section"] == pytest.approx(3 / 9)
    assert set(s0) == {"recall", "citation_accuracy_document", "citation_accuracy_section", "citation_accuracy_sentence",
                       "rouge_1", "rouge_2", "rouge_l", "bleu"}
    assert set(res["surveys"]) == {"0", "5"}
    assert "not UTF-8" in res["errors"]["1"][0] and "no GT survey" in res["errors"]["99"][0]
    # one NLI call for the distinct pairs of both surveys
    assert len(nli.calls) == 1
    pairs = nli.calls[0]
    assert len(pairs) == len(set(pairs))
    assert res["config"]["mode"] == "reference" and res["config"]["models"]["nli"]["name"] == "fake-nli"
    assert res["details"]["0"]["resolution"]["title"] == 3
    for name in ("results.json", "results.jsonl", "results.md", "nli_cache.jsonl"):
        assert (out / name).exists()
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    assert "| **mean** |" in (out / "results.md").read_text()

    # a re-run skips finished surveys: no model call, same numbers
    again = evaluate_dir(gen_dir, surveys, corpus, out, cfg, models=Models(nli=FakeNLI()), progress=False)
    assert again["surveys"] == res["surveys"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 2

    # a torn last line (crash mid-write) is ignored; the survey is evaluated again
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n" + lines[1][:20])
    third = evaluate_dir(gen_dir, surveys, corpus, out, cfg, models=Models(nli=FakeNLI()), progress=False)
    assert third["surveys"] == res["surveys"]

    with pytest.raises(ValueError, match="mode"):
        evaluate_dir(gen_dir, surveys, corpus, out, EvalConfig(mode="paper"), models=Models(nli=FakeNLI()), progress=False)


def test_unavailable_model_is_skipped_not_zero(setup, tmp_path):
    gen_dir, surveys, corpus = setup
    cfg = EvalConfig(metrics="recall,citation_accuracy,soft_heading_recall", nli_model=str(tmp_path / "no-such-nli"),
                     embed_model=str(tmp_path / "no-such-embedder"))
    res = evaluate_dir(gen_dir, surveys, corpus, tmp_path / "out", cfg, progress=False)
    assert set(res["skipped"]) == {"citation_accuracy", "soft_heading_recall"}
    assert "no-such-nli" in res["skipped"]["citation_accuracy"]
    assert set(res["aggregate"]) == {"recall"}
    assert "citation_accuracy_document" not in res["surveys"]["0"]
    # once the model is there, a re-run fills in the skipped metric only
    res2 = evaluate_dir(gen_dir, surveys, corpus, tmp_path / "out", EvalConfig(metrics="recall,citation_accuracy"),
                        models=Models(nli=FakeNLI()), progress=False)
    assert res2["surveys"]["0"]["citation_accuracy_document"] == pytest.approx(0.5)


def test_paper_mode_run(setup, tmp_path):
    gen_dir, surveys, corpus = setup
    res = evaluate_dir(gen_dir, surveys, corpus, tmp_path / "p", EvalConfig(metrics="recall,citation_accuracy", mode="paper"),
                       models=Models(nli=FakeNLI()), progress=False)
    assert res["surveys"]["0"]["recall"] == pytest.approx(0.5)
    assert res["surveys"]["0"]["citation_accuracy_section"] == pytest.approx(0.5)


@pytest.mark.slow
def test_tiny_nli_through_the_real_loader(setup, tmp_path):
    from surge_datasets.models.testing import build_tiny_nli

    gen_dir, surveys, corpus = setup
    # label order entailment, neutral, contradiction; the classifier always answers id 0 = entailment
    folder = build_tiny_nli(tmp_path / "nli", id2label={0: "entailment", 1: "neutral", 2: "contradiction"}, logit_bias=[3, 0, 0])
    res = evaluate_dir(gen_dir, surveys, corpus, tmp_path / "o", EvalConfig(metrics="citation_accuracy", nli_model=folder),
                       progress=False)
    s0 = res["surveys"]["0"]
    assert s0["citation_accuracy_document"] == pytest.approx(3 / 4)  # all but the unresolved reference
    assert s0["citation_accuracy_section"] == pytest.approx(6 / 9)  # all resolved instances
    assert res["config"]["models"]["nli"]["name"] == folder


def test_compare(setup, tmp_path):
    gen_dir, surveys, corpus = setup
    a = evaluate_dir(gen_dir, surveys, corpus, tmp_path / "a", EvalConfig(metrics="recall,rouge_bleu"), progress=False)
    evaluate_dir(gen_dir, surveys, corpus, tmp_path / "b", EvalConfig(metrics="recall", mode="paper"), progress=False)
    cmp = write_comparison([tmp_path / "a", tmp_path / "b"], tmp_path / "cmp", ["A", "B"])
    assert cmp["systems"] == ["A", "B"] and cmp["table"]["A"]["recall"] == a["aggregate"]["recall"]
    assert (tmp_path / "cmp" / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert "different modes" in (tmp_path / "cmp" / "comparison.md").read_text()
    with pytest.raises(FileNotFoundError, match="results.json"):
        write_comparison([tmp_path], tmp_path / "x")


@pytest.mark.slow
def test_cli_evaluate_and_compare(tmp_path):
    from surge_datasets.cli import main
    from surge_datasets.sample import generated_path, sample_path

    runner = CliRunner()
    for cmd in ("evaluate", "compare"):
        r = runner.invoke(main, [cmd, "--help"])
        assert r.exit_code == 0 and "Example:" in r.output
    out = tmp_path / "r"
    r = runner.invoke(main, ["evaluate", str(generated_path()), "--data", str(sample_path()), "--out", str(out),
                             "--metrics", "recall,rouge_bleu"])
    assert r.exit_code == 0, r.output
    assert "recall" in r.output and (out / "results.json").exists()
    res = json.loads((out / "results.json").read_text())
    assert len(res["surveys"]) == 3 and 0 < res["aggregate"]["recall"] < 1
    r = runner.invoke(main, ["evaluate", str(generated_path()), "--data", str(tmp_path / "nothing"), "--out", str(out)])
    assert r.exit_code != 0 and "--data" in r.output
    r = runner.invoke(main, ["compare", str(out), "--out", str(tmp_path / "c")])
    assert r.exit_code == 0 and (tmp_path / "c" / "comparison.png").exists()
