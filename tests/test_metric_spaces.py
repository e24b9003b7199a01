"""The evaluate Space folders: layout, offline loading by path and by Hub name, publishing plan."""

from __future__ import annotations

import re

import evaluate
import pytest
from click.testing import CliRunner

from surge_datasets.cli import main
from surge_datasets.corpus import Corpus
from surge_datasets.metric_publishing import METRIC_NAMES, install_metrics, metrics_root, publish_metrics
from surge_datasets.models.judge import Judge
from surge_datasets.models.testing import build_tiny_embedder, build_tiny_nli
from surge_datasets.schemas import CorpusDoc, Section, Survey

SURVEY_MD = """# A Survey of Graph Learning
## Introduction
Graph neural networks changed how we learn on graphs [1]. Attention models followed [2]. Some work is unknown [3].
## Methods
Message passing methods aggregate the features of neighbours in each layer of the network, and the
readout pools node states into a graph representation for the final prediction task.

References:
[1] Graph Neural Networks: A Review of Methods
[2] Attention Is All You Need
"""


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spaces")
    corpus = Corpus.from_docs([
        CorpusDoc(doc_id=1, title="Graph Neural Networks: A Review of Methods", abstract="We review graph networks."),
        CorpusDoc(doc_id=2, title="Attention Is All You Need", abstract="The transformer model."),
        CorpusDoc(doc_id=3, title="Deep Residual Learning", abstract="Residual networks."),
    ], folder / "corpus")
    gt = Survey(survey_id=7, title="Graph Learning: A Survey", all_cites=[1, 3], structure=[
        Section(id="r", title="root"),
        Section(id="a", parent_id="r", title="Introduction", content="Graphs are everywhere. " * 8, cites=[1]),
        Section(id="b", parent_id="r", title="Methods", content="Message passing aggregates neighbour features. " * 4),
    ])
    return {"corpus": corpus, "surveys": {7: gt}, "folder": folder}


class FixedJudge(Judge):
    def __init__(self):
        super().__init__("fixed", cache=False)

    def _complete(self, prompt, system, attempt):
        return "4"


def test_each_folder_is_an_evaluate_space():
    root = metrics_root()
    assert (root / "__init__.py").is_file()
    for name in METRIC_NAMES:
        folder = root / name
        for f in (f"{name}.py", "README.md", "requirements.txt", "app.py"):
            assert (folder / f).is_file(), f"{folder}/{f}"
        card = (folder / "README.md").read_text(encoding="utf-8")
        front = re.match(r"^---\n(.*?)\n---\n", card, re.S)
        assert front and "sdk: gradio" in front.group(1) and "- evaluate" in front.group(1) and "app_file: app.py" in front.group(1)
        assert "surge-datasets" in (folder / "requirements.txt").read_text()
        for py in (f"{name}.py", "app.py"):
            for line in (folder / py).read_text().splitlines():
                # evaluate's import scanner misreads `import a, b`
                assert not re.match(r"^\s*import\s+\w+(\.\w+)*\s*,", line), f"{py}: {line}"


def test_load_by_path_offline_and_compute(tiny_data, tmp_path):
    corpus, surveys = tiny_data["corpus"], tiny_data["surveys"]
    root = metrics_root()
    kw = {"corpus": corpus, "surveys": surveys}

    recall = evaluate.load(str(root / "citation_recall"))
    out = recall.compute(predictions=[SURVEY_MD], references=[7], **kw)
    assert out["recall"] == pytest.approx(0.5) and out["per_survey"] == [{"survey_id": 7, "recall": 0.5}]

    nli_dir = build_tiny_nli(tmp_path / "nli", logit_bias=[3.0, 0.0, -1.0])        # always "entailment"
    acc = evaluate.load(str(root / "citation_accuracy"))
    out = acc.compute(predictions=[SURVEY_MD], references=[7], nli_model=nli_dir, **kw)
    # document: [1] in the GT bibliography -> 1, [2] entailed -> 1.
    # section/sentence (reference mode reads the reference list lines under "Methods" as citations too,
    # as the paper's code does): [1] [2] [3] [1] [2] -> 1 1 0 1 1 = 4/5
    assert out["citation_accuracy_document"] == pytest.approx(1.0)
    assert out["citation_accuracy_section"] == pytest.approx(0.8)
    assert out["citation_accuracy_sentence"] == pytest.approx(0.8)
    paper = acc.compute(predictions=[SURVEY_MD], references=[7], nli_model=nli_dir, mode="paper", **kw)
    assert paper["citation_accuracy_section"] == pytest.approx(2 / 3) and paper["mode"] == "paper"

    shr = evaluate.load(str(root / "soft_heading_recall"))
    out = shr.compute(predictions=[SURVEY_MD], references=[7], embed_model=build_tiny_embedder(tmp_path / "emb"), **kw)
    assert 0.0 < out["soft_heading_recall"] <= 1.0 + 1e-6

    judge = FixedJudge()
    sqs = evaluate.load(str(root / "structure_quality"))
    assert sqs.compute(predictions=[SURVEY_MD], references=[7], judge=judge, **kw)["structure_quality"] == 4.0
    cqs = evaluate.load(str(root / "content_quality"))
    assert cqs.compute(predictions=[SURVEY_MD], references=[7], judge=judge)["content_quality"] == 4.0

    rb = evaluate.load(str(root / "rouge_bleu"))
    out = rb.compute(predictions=[SURVEY_MD], references=[7], **kw)
    assert set(out) >= {"rouge_1", "rouge_2", "rouge_l", "bleu"} and 0 < out["rouge_l"] <= 1


def test_prediction_as_a_path(tiny_data, tmp_path):
    folder = tmp_path / "7"
    folder.mkdir()
    (folder / "survey.md").write_text(SURVEY_MD, encoding="utf-8")
    recall = evaluate.load(str(metrics_root() / "citation_recall"))
    out = recall.compute(predictions=[str(folder)], references=[7], corpus=tiny_data["corpus"],
                         surveys=tiny_data["surveys"])
    assert out["recall"] == pytest.approx(0.5)


def test_metrics_install_then_load_by_hub_name_offline(tiny_data):
    result = CliRunner().invoke(main, ["metrics", "install", "--json"])
    assert result.exit_code == 0, result.output
    assert set(__import__("json").loads(result.output)) == {f"surge/{n}" for n in METRIC_NAMES}
    metric = evaluate.load("surge/rouge_bleu")
    assert type(metric).__name__ == "RougeBleu"
    out = metric.compute(predictions=[SURVEY_MD], references=[7], surveys=tiny_data["surveys"])
    assert 0 < out["rouge_1"] <= 1
    assert type(evaluate.load("surge/citation_accuracy")).__name__ == "CitationAccuracy"
    # installing again is harmless
    assert install_metrics(names=["rouge_bleu"])["rouge_bleu"].is_file()


def test_unknown_hub_name_still_fails_clearly():
    with pytest.raises(FileNotFoundError):
        evaluate.load("surge/no_such_metric")


def test_publish_dry_run_changes_nothing():
    result = CliRunner().invoke(main, ["publish-metrics", "--org", "surge", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "surge/citation_accuracy" in result.output and "nothing was changed" in result.output
    assert "Example:" in CliRunner().invoke(main, ["publish-metrics", "--help"]).output
    bad = CliRunner().invoke(main, ["publish-metrics", "--names", "nope", "--dry-run"])
    assert bad.exit_code != 0 and "unknown metric" in bad.output


def test_publish_calls_the_hub_api_per_space():
    calls = []

    class FakeApi:
        def create_repo(self, repo_id, **kw):
            calls.append(("create", repo_id, kw))

        def upload_folder(self, **kw):
            calls.append(("upload", kw["repo_id"], kw))

    steps = publish_metrics("my-lab", ["citation_accuracy", "rouge_bleu"], api=FakeApi())
    assert [s.url for s in steps] == ["https://huggingface.co/spaces/my-lab/citation_accuracy",
                                      "https://huggingface.co/spaces/my-lab/rouge_bleu"]
    create = calls[0][2]
    assert create["repo_type"] == "space" and create["space_sdk"] == "gradio" and create["exist_ok"]
    upload = calls[1][2]
    assert upload["repo_type"] == "space" and upload["folder_path"].endswith("citation_accuracy")
    assert "citation_accuracy.py" in upload["allow_patterns"]
