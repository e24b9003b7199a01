"""Dense retriever: a tiny RoBERTa trains on CPU, encoding resumes, faiss search equals brute force."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from surge_datasets.retrieval.documents import iter_text_batches, open_corpus
from surge_datasets.retrieval.testing import build_tiny_roberta, build_toy_benchmark

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense")
    paths = build_toy_benchmark(root / "data")
    corpus = open_corpus(paths["corpus"])
    texts = [t for _, batch in iter_text_batches(corpus) for t in batch]
    paths["model"] = build_tiny_roberta(root / "tiny", texts)
    paths["root"] = root
    return paths


@pytest.fixture(scope="module")
def trained(toy):
    """The tiny RoBERTa after 3 epochs on the toy benchmark (27 steps)."""
    from surge_datasets.retrieval.train import train

    return train(_config(toy, toy["root"] / "trained"))


def _config(toy, out, **kw):
    from surge_datasets.retrieval.train import TrainConfig

    base = dict(queries=str(toy["queries"]), corpus=str(toy["corpus"]), out=str(out), model=str(toy["model"]),
                surveys=str(toy["surveys"]), epochs=3, lr=1e-3, batch_size=8, negatives=3, progress=False,
                query_max_length=32, doc_max_length=48)
    base.update(kw)
    return TrainConfig(**base)


def test_training_pairs_follow_split_and_topics(toy):
    from surge_datasets.retrieval.train import training_pairs

    pairs, groups = training_pairs(str(toy["queries"]), surveys_source=str(toy["surveys"]))
    # 6 train queries x 4 cites + 6 survey titles x 8 cites
    assert len(pairs) == 6 * 4 + 6 * 8 and len(groups) == 12
    assert not any("camera and detection" in p.text and p.positive >= 1104 for p in pairs)
    pairs_q, _ = training_pairs(str(toy["queries"]), with_topics=False)
    assert len(pairs_q) == 24


def test_tiny_roberta_loss_falls(trained):
    from surge_datasets.retrieval.dense_model import DualEncoder

    result = trained
    losses = result.losses
    assert result.steps == 27 and result.epochs_done == 3
    assert losses[0] == pytest.approx(np.log(4), abs=0.05)  # 1 positive among 4: chance level
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.2
    out = Path(result.out)
    model = DualEncoder.from_pretrained(out)
    assert model.config.pooling == "cls" and model.config.doc_max_length == 48 and (out / "tokenizer.json").is_file()
    assert json.loads((out / "train_log.json").read_text())["global_step"] == 27


def test_training_resumes_where_it_stopped(toy, tmp_path):
    from surge_datasets.retrieval.train import train

    straight = train(_config(toy, tmp_path / "a", max_steps=12))
    first = train(_config(toy, tmp_path / "b", max_steps=6))
    resumed = train(_config(toy, tmp_path / "b", max_steps=12))
    assert first.steps == 6 and resumed.resumed_from.endswith("step-00000006")
    np.testing.assert_allclose(resumed.losses, straight.losses, rtol=1e-4, atol=1e-5)


def test_in_batch_negatives_loss():
    import torch

    from surge_datasets.retrieval.train import contrastive_loss

    class Identity(torch.nn.Module):
        def forward(self, ids, mask):
            return ids.float()

    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    d = torch.tensor([[2.0, 0.0], [0.0, 0.0], [0.0, 3.0], [1.0, 0.0]])  # per query: positive, one negative
    batch = {"q_ids": q, "q_mask": None, "d_ids": d, "d_mask": None}
    own = contrastive_loss(Identity(), batch)
    expected_own = np.mean([-np.log(np.exp(2) / (np.exp(2) + 1)), -np.log(np.exp(3) / (np.exp(3) + 1))])
    assert own.item() == pytest.approx(expected_own, rel=1e-5)
    shared = contrastive_loss(Identity(), batch, in_batch_negatives=True)
    s0, s1 = np.array([2, 0, 0, 1.0]), np.array([0, 0, 3, 0.0])
    expected_shared = np.mean([-s0[0] + np.log(np.exp(s0).sum()), -s1[2] + np.log(np.exp(s1).sum())])
    assert shared.item() == pytest.approx(expected_shared, rel=1e-5)


def test_dense_search_equals_numpy_brute_force(toy, trained, tmp_path):
    from surge_datasets.retrieval.dense_model import TextEncoder
    from surge_datasets.retrieval.encode import DenseIndex, encode_corpus, load_shards
    from surge_datasets.retrieval.documents import doc_ids

    manifest = encode_corpus(trained.out, toy["corpus"], tmp_path / "idx", shard_size=16, dtype="float32", progress=False)
    assert manifest["status"] == "complete" and manifest["n_shards"] == 4 and manifest["dim"] == 32
    corpus = open_corpus(toy["corpus"])
    encoder = TextEncoder(trained.out)
    stored = load_shards(tmp_path / "idx", 4, "float32")
    # the shards hold what the encoder gives for the documents (batching changes only padding)
    direct = encoder.encode([t for _, b in iter_text_batches(corpus) for t in b])
    np.testing.assert_allclose(stored, direct, rtol=1e-4, atol=1e-4)
    queries = ["graph node methods", "speech audio", "stock market prices"]
    q = encoder.encode(queries, kind="query")
    scores = q @ stored.T
    ids = doc_ids(corpus)
    index = DenseIndex.open(tmp_path / "idx")
    for qi, hits in enumerate(index.search(queries, k=10)):
        order = np.argsort(-scores[qi], kind="stable")[:10]
        assert [d for d, _ in hits] == [int(ids[r]) for r in order]
        np.testing.assert_allclose([s for _, s in hits], scores[qi][order], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_indexes_report_recall_vs_exact(kind):
    from surge_datasets.retrieval.encode import build_faiss_index

    vectors = np.random.default_rng(0).standard_normal((2000, 16)).astype(np.float32)
    info = build_faiss_index(vectors, kind, ivf_nlist=16, recall_k=10, recall_queries=100)
    assert 0.3 < info["recall_vs_exact@10"] <= 1.0 and info["ntotal"] == 2000


def test_interrupted_encoding_resumes_to_the_same_index(toy, tmp_path):
    from surge_datasets.retrieval.encode import encode_corpus, shard_path

    full = tmp_path / "full"
    encode_corpus(toy["model"], toy["corpus"], full, shard_size=8, progress=False)

    class Interrupted(RuntimeError):
        pass

    def fail_after_three(i):
        if i == 2:
            raise Interrupted

    part = tmp_path / "part"
    with pytest.raises(Interrupted):
        encode_corpus(toy["model"], toy["corpus"], part, shard_size=8, progress=False, on_shard_written=fail_after_three)
    assert sorted(p.name for p in (part / "shards").iterdir()) == ["emb-00000.npy", "emb-00001.npy", "emb-00002.npy"]
    assert json.loads((part / "manifest.json").read_text())["status"] == "encoding"
    written = {i: shard_path(part, i).stat().st_mtime_ns for i in range(3)}
    manifest = encode_corpus(toy["model"], toy["corpus"], part, shard_size=8, progress=False)
    assert manifest["last_run"]["encoded_docs"] == 60 - 24  # only the missing shards
    assert all(shard_path(part, i).stat().st_mtime_ns == t for i, t in written.items())
    for i in range(manifest["n_shards"]):
        np.testing.assert_array_equal(np.load(shard_path(part, i)), np.load(shard_path(full, i)))
    assert (part / "index.faiss").read_bytes() == (full / "index.faiss").read_bytes()


def test_killed_encoding_process_resumes(toy, tmp_path):
    """SIGKILL after the second shard (no cleanup runs), then a rerun finishes the index."""
    out = tmp_path / "killed"
    script = (
        "import os, signal\n"
        "from surge_datasets.retrieval.encode import encode_corpus\n"
        "def kill(i):\n"
        "    if i == 1: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"encode_corpus({str(toy['model'])!r}, {str(toy['corpus'])!r}, {str(out)!r}, shard_size=16, progress=False, on_shard_written=kill)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env={**os.environ, "TQDM_DISABLE": "1"})
    assert proc.returncode == -signal.SIGKILL
    assert len(list((out / "shards").glob("emb-*.npy"))) == 2
    from surge_datasets.retrieval.encode import encode_corpus

    manifest = encode_corpus(toy["model"], toy["corpus"], out, shard_size=16, progress=False)
    assert manifest["status"] == "complete" and manifest["last_run"]["encoded_docs"] == 60 - 32


def test_other_model_or_shard_size_is_refused(toy, tmp_path):
    from surge_datasets.retrieval.encode import encode_corpus

    out = tmp_path / "idx"
    encode_corpus(toy["model"], toy["corpus"], out, shard_size=30, progress=False)
    with pytest.raises(ValueError, match="shard_size"):
        encode_corpus(toy["model"], toy["corpus"], out, shard_size=20, progress=False)
    manifest = encode_corpus(toy["model"], toy["corpus"], out, shard_size=20, progress=False, overwrite=True)
    assert manifest["n_shards"] == 3
