"""The NLI cross-encoder loader: label order from the config, de-duplication, offline errors."""

from __future__ import annotations

import numpy as np
import pytest

from surge_datasets.models import ModelUnavailable
from surge_datasets.models.nli import LABELS, label_columns, load_nli
from surge_datasets.models.testing import TINY_NLI_LABELS, build_tiny_nli


@pytest.fixture(scope="module")
def tiny_nli_dir(tmp_path_factory):
    # logits = bias for every input: output id 0 ("entailment" in this model) always wins
    return build_tiny_nli(tmp_path_factory.mktemp("nli") / "biased", logit_bias=[3.0, 0.0, -1.0])


def test_label_columns_follow_id2label():
    assert label_columns({0: "contradiction", 1: "entailment", 2: "neutral"}) == [0, 1, 2]
    assert label_columns(TINY_NLI_LABELS) == [2, 0, 1]
    assert label_columns({"0": "ENTAILMENT", "1": "Neutral", "2": "CONTRADICTION"}) == [2, 0, 1]
    with pytest.raises(ValueError):
        label_columns({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_predict_returns_contradiction_entailment_neutral_columns(tiny_nli_dir):
    model = load_nli(tiny_nli_dir, device="cpu", batch_size=2)
    assert model.columns == [2, 0, 1] and model.revision is None and model.name == tiny_nli_dir
    probs = model.predict([("a paper about graphs", "the survey"), ("x", "y")])
    assert probs.shape == (2, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    e = np.exp([3.0, 0.0, -1.0]) / np.exp([3.0, 0.0, -1.0]).sum()   # softmax over ids (entail, neutral, contra)
    np.testing.assert_allclose(probs[0], [e[2], e[0], e[1]], rtol=1e-4)
    assert LABELS[int(probs[0].argmax())] == "entailment"


def test_predict_deduplicates_and_keeps_input_order(tmp_path):
    model = load_nli(build_tiny_nli(tmp_path / "random"), batch_size=3)
    pairs = [("deep learning survey", f"section {i % 4} model") for i in range(10)] + [("a", "b")]
    probs = model.predict(pairs)
    assert model.pairs_scored == 5                       # 4 distinct + ("a", "b")
    for i in range(10):
        np.testing.assert_allclose(probs[i], probs[i % 4], rtol=1e-6)
    one_by_one = np.vstack([model.predict([p]) for p in pairs[:4]])
    np.testing.assert_allclose(probs[:4], one_by_one, rtol=1e-4, atol=1e-6)
    assert model.predict([]).shape == (0, 3)


def test_not_an_nli_model_is_refused(tmp_path):
    path = build_tiny_nli(tmp_path / "generic", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ModelUnavailable, match="3-way NLI"):
        load_nli(path)


def test_missing_model_offline_names_the_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable) as info:
        load_nli("cross-encoder/nli-deberta-v3-base")
    msg = str(info.value)
    assert "cross-encoder/nli-deberta-v3-base" in msg and "hf download" in msg and "offline" in msg
