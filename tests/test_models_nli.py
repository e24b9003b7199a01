"""The NLI cross-encoder loader: label order from the config, de-duplication, offline errors."""

from __future__ import annotations

import numpy as np
import pytest

from surge_datasets.models import ModelUnavailable
from surge_datasets.models.nli import DEFAULT_BATCH_SIZE, LABELS, cpuinfo_has_bf16, label_columns, load_nli, resolve_dtype
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


def test_cpuinfo_bf16_flags():
    assert cpuinfo_has_bf16("processor\t: 0\nflags\t\t: fpu sse avx512f avx512_bf16 avx512_vnni\n")
    assert cpuinfo_has_bf16("flags : fpu amx_tile amx_bf16\n")
    assert cpuinfo_has_bf16("Features\t: fp asimd bf16 i8mm\n")            # ARM
    assert not cpuinfo_has_bf16("flags\t\t: fpu sse avx2 avx512f\n")
    assert not cpuinfo_has_bf16("")


def test_dtype_auto_follows_the_hardware(monkeypatch):
    from surge_datasets.models import nli

    assert resolve_dtype("float32", "cpu") == "float32" and resolve_dtype("bfloat16", "cpu") == "bfloat16"
    monkeypatch.setattr(nli, "cpu_has_native_bf16", lambda: False)
    assert resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(nli, "cpu_has_native_bf16", lambda: True)
    assert resolve_dtype("auto", "cpu") == "bfloat16"
    assert resolve_dtype("auto", "mps") == "float32"
    with pytest.raises(ValueError, match="float32"):
        resolve_dtype("half", "cpu")


def test_bfloat16_scores_close_to_float32_and_cached_apart(tmp_path):
    path = build_tiny_nli(tmp_path / "random", seed=3)
    full = load_nli(path, device="cpu", dtype="float32", show_progress=False)
    half = load_nli(path, device="cpu", dtype="bfloat16", show_progress=False)
    assert (full.dtype, half.dtype) == ("float32", "bfloat16")
    assert full.batch_size == DEFAULT_BATCH_SIZE["cpu"] and load_nli(path, batch_size=3).batch_size == 3
    pairs = [(f"paper {i} on graph neural network models", f"the survey section {i % 7} on deep learning")
             for i in range(40)]
    a, b = full.predict(pairs), half.predict(pairs)
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_allclose(b, a, atol=2e-2)
    assert full.cache_id != half.cache_id and full.cache_id.endswith(":float32")
    with pytest.raises(ValueError, match="dtype"):
        load_nli(path, dtype="int8")


def test_results_config_records_the_nli_precision(tmp_path):
    from surge_datasets.evaluation.runner import EvalConfig, Models, nli_cache_id

    model = load_nli(build_tiny_nli(tmp_path / "m"), dtype="float32", show_progress=False)
    assert Models(nli=model).describe()["nli"]["dtype"] == "float32"
    assert nli_cache_id(model) == model.cache_id
    with pytest.raises(ValueError, match="nli_dtype"):
        EvalConfig(nli_dtype="fp8")
