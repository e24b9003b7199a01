"""Encoding the corpus with a dual encoder, in shards that resume, then a faiss index over the vectors.

Layout of an index folder::

    manifest.json          kind "dense", model, corpus fingerprint, shard size, dtype, index settings, status
    shards/emb-00000.npy   rows [0, shard_size) in corpus order, float16 or float32, one file per shard
    doc_ids.npy            row -> corpus doc_id
    index.faiss            exact inner product (IndexFlatIP) by default; IVF or HNSW on request

Each shard is written atomically, so an interrupted run (killed, out of memory, preempted) restarts where
it stopped: existing shards of the same model and corpus are kept. On several GPUs (``accelerate launch``)
the missing shards are divided between the processes with ``PartialState.split_between_processes``; the
main process then builds the index. Approximate indexes record their recall against the exact one
(``recall_vs_exact@k``, measured with corpus vectors as pseudo-queries) in the manifest.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Optional

import numpy as np

from .documents import corpus_fingerprint, doc_ids, open_corpus, texts_slice
from .storage import MANIFEST, read_json, read_manifest, save_npy, write_manifest

if TYPE_CHECKING:  # pragma: no cover
    from ..corpus import Corpus

KIND = "dense"
IndexType = Literal["flat", "ivf", "hnsw"]
INDEX_FILE = "index.faiss"


def model_fingerprint(model: str | os.PathLike) -> dict:
    """Identity of a retriever checkpoint: its path and a hash of its configuration and weight files."""
    path = Path(model)
    if not path.is_dir():
        return {"name": str(model), "sha256": None}
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if not f.is_file() or "checkpoints" in f.relative_to(path).parts:
            continue
        rel = str(f.relative_to(path))
        h.update(rel.encode())
        if f.suffix in (".json", ".txt") and f.stat().st_size < 5_000_000:
            h.update(f.read_bytes())
        else:
            st = f.stat()
            h.update(f"{st.st_size}".encode())
            with open(f, "rb") as fh:  # head and tail of large weight files
                h.update(fh.read(1 << 20))
                fh.seek(max(0, st.st_size - (1 << 20)))
                h.update(fh.read(1 << 20))
    return {"name": str(path.resolve()), "sha256": h.hexdigest()[:16]}


def shard_path(out: Path, i: int) -> Path:
    return out / "shards" / f"emb-{i:05d}.npy"


def _shard_ok(path: Path, rows: int, dim: Optional[int], dtype: str) -> bool:
    try:
        arr = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return arr.shape[0] == rows and (dim is None or arr.shape[1] == dim) and arr.dtype == np.dtype(dtype)


def encode_corpus(
    model: str | os.PathLike,
    corpus: "Corpus | str | os.PathLike",
    out: str | os.PathLike,
    *,
    shard_size: int = 50_000,
    batch_size: int = 128,
    dtype: Literal["float16", "float32"] = "float16",
    index: IndexType = "flat",
    ivf_nlist: Optional[int] = None,
    ivf_nprobe: int = 32,
    hnsw_m: int = 32,
    hnsw_ef_search: int = 128,
    device: Optional[str] = None,
    overwrite: bool = False,
    progress: bool = True,
    on_shard_written: Optional[Callable[[int], None]] = None,
) -> dict:
    """Encode every document (resuming from existing shards) and build the index; returns the manifest."""
    from accelerate import PartialState
    from tqdm.auto import tqdm

    from .dense_model import TextEncoder

    state = PartialState()
    corpus = open_corpus(corpus)
    out = Path(out)
    n_docs = corpus.table.num_rows
    if n_docs == 0:
        raise ValueError("the corpus is empty")
    settings = {
        "kind": KIND,
        "model": model_fingerprint(model),
        "corpus": corpus_fingerprint(corpus),
        "shard_size": int(shard_size),
        "dtype": dtype,
    }
    if state.is_main_process:
        _prepare_folder(out, settings, overwrite)
    state.wait_for_everyone()

    n_shards = math.ceil(n_docs / shard_size)
    rows_of = lambda i: min(n_docs, (i + 1) * shard_size) - i * shard_size  # noqa: E731
    pending = [i for i in range(n_shards) if not _shard_ok(shard_path(out, i), rows_of(i), None, dtype)]
    encoder = None
    started = time.perf_counter()
    encoded = 0
    with state.split_between_processes(pending) as mine:
        if mine:
            encoder = TextEncoder(model, device=device or (str(state.device) if state.device.type != "cpu" else None))
            bar = tqdm(total=sum(rows_of(i) for i in mine), desc=f"encode corpus [{state.process_index}]", unit="doc",
                       disable=not progress)
            for i in mine:
                texts = texts_slice(corpus, i * shard_size, i * shard_size + rows_of(i))
                vectors = encoder.encode(texts, kind="doc", batch_size=batch_size).astype(dtype)
                save_npy(shard_path(out, i), vectors)
                encoded += len(texts)
                bar.update(len(texts))
                if on_shard_written is not None:
                    on_shard_written(i)
            bar.close()
    encode_seconds = time.perf_counter() - started
    state.wait_for_everyone()

    manifest = read_manifest(out, KIND)
    if state.is_main_process:
        vectors = load_shards(out, n_shards, dtype)
        save_npy(out / "doc_ids.npy", doc_ids(corpus))
        built = build_faiss_index(vectors, index, ivf_nlist=ivf_nlist, ivf_nprobe=ivf_nprobe, hnsw_m=hnsw_m,
                                  hnsw_ef_search=hnsw_ef_search)
        _write_index(built["index"], out / INDEX_FILE)
        manifest.update({
            "status": "complete",
            "n_shards": n_shards,
            "dim": int(vectors.shape[1]),
            "index": {k: v for k, v in built.items() if k != "index"},
            "last_run": {"encoded_docs": encoded, "encode_seconds": round(encode_seconds, 2),
                         "docs_per_second": round(encoded / encode_seconds, 1) if encoded else None,
                         "processes": state.num_processes},
        })
        write_manifest(out, manifest)
    state.wait_for_everyone()
    return read_manifest(out, KIND)


def _prepare_folder(out: Path, settings: dict, overwrite: bool) -> None:
    path = out / MANIFEST
    if path.is_file():
        old = read_json(path)
        same = all(old.get(k) == v for k, v in settings.items())
        if not same:
            if not overwrite:
                diff = [k for k, v in settings.items() if old.get(k) != v]
                raise ValueError(f"{out}: holds vectors of another {'/'.join(diff)}; use another folder or overwrite")
            shutil.rmtree(out / "shards", ignore_errors=True)
            for name in (INDEX_FILE, "doc_ids.npy"):
                (out / name).unlink(missing_ok=True)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    write_manifest(out, {**settings, "status": "encoding"})


def load_shards(out: Path, n_shards: int, dtype: str) -> np.ndarray:
    """All shards as one float32 matrix (rows in corpus order)."""
    first = np.load(shard_path(out, 0), mmap_mode="r")
    sizes = [np.load(shard_path(out, i), mmap_mode="r").shape[0] for i in range(n_shards)]
    vectors = np.empty((sum(sizes), first.shape[1]), dtype=np.float32)
    start = 0
    for i, size in enumerate(sizes):
        vectors[start:start + size] = np.load(shard_path(out, i), mmap_mode="r")
        start += size
    return vectors


def build_faiss_index(
    vectors: np.ndarray,
    kind: IndexType = "flat",
    *,
    ivf_nlist: Optional[int] = None,
    ivf_nprobe: int = 32,
    hnsw_m: int = 32,
    hnsw_ef_search: int = 128,
    recall_k: int = 100,
    recall_queries: int = 1000,
    seed: int = 0,
) -> dict:
    """An inner-product faiss index over ``vectors``; approximate kinds report their recall vs exact."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = vectors.shape
    info: dict = {"type": kind, "metric": "inner_product"}
    t0 = time.perf_counter()
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
        index.add(vectors)
    elif kind == "ivf":
        nlist = ivf_nlist or max(1, min(int(4 * math.sqrt(n)), n // 39 or 1))
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(seed)
        sample = vectors[np.sort(rng.choice(n, size=min(n, max(256 * nlist, 39 * nlist)), replace=False))]
        index.train(sample)
        index.add(vectors)
        index.nprobe = min(ivf_nprobe, nlist)
        info.update(nlist=nlist, nprobe=index.nprobe)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = max(40, 2 * hnsw_m)
        index.add(vectors)
        index.hnsw.efSearch = hnsw_ef_search
        info.update(m=hnsw_m, ef_search=hnsw_ef_search)
    else:
        raise ValueError(f"unknown index type {kind!r}; use flat, ivf or hnsw")
    info["build_seconds"] = round(time.perf_counter() - t0, 2)
    info["ntotal"] = int(index.ntotal)
    if kind != "flat":
        k = min(recall_k, n)
        rng = np.random.default_rng(seed + 1)
        queries = vectors[rng.choice(n, size=min(recall_queries, n), replace=False)]
        exact = faiss.IndexFlatIP(d)
        exact.add(vectors)
        _, truth = exact.search(queries, k)
        _, approx = index.search(queries, k)
        overlap = [len(set(a) & set(t)) / k for a, t in zip(approx.tolist(), truth.tolist())]
        info[f"recall_vs_exact@{k}"] = round(float(np.mean(overlap)), 4)
        info["recall_queries"] = len(queries)
    info["index"] = index
    return info


def _write_index(index, path: Path) -> None:
    import faiss

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)


class DenseIndex:
    """A built dense index with its query encoder. ``search`` returns ``(doc_id, score)`` lists, best first."""

    def __init__(self, folder: str | os.PathLike, *, model: Optional[str] = None, device: Optional[str] = None,
                 batch_size: int = 64):
        import faiss

        from .dense_model import TextEncoder

        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder, KIND)
        if self.manifest.get("status") != "complete":
            raise ValueError(f"{self.folder}: encoding has not finished; rerun `surge index dense` to resume it")
        self.index = faiss.read_index(str(self.folder / INDEX_FILE))
        info = self.manifest.get("index", {})
        if "nprobe" in info:
            self.index.nprobe = info["nprobe"]
        if "ef_search" in info:
            self.index.hnsw.efSearch = info["ef_search"]
        self.doc_ids = np.load(self.folder / "doc_ids.npy")
        self.model_path = model or self.manifest["model"]["name"]
        self.encoder = TextEncoder(self.model_path, device=device)
        self.batch_size = batch_size

    @classmethod
    def open(cls, folder: str | os.PathLike, **kwargs) -> "DenseIndex":
        return cls(folder, **kwargs)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search_vectors(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        k = min(k, len(self))
        scores, rows = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return [[(int(self.doc_ids[r]), float(s)) for r, s in zip(rr, ss) if r >= 0] for rr, ss in zip(rows, scores)]

    def search(self, texts, k: int = 100, *, progress: bool = False) -> list[list[tuple[int, float]]]:
        texts = list(texts)
        vectors = self.encoder.encode(texts, kind="query", batch_size=self.batch_size)
        return self.search_vectors(vectors, k)


def main(argv: list[str] | None = None) -> None:
    """``python -m surge_datasets.retrieval.encode`` (also under ``accelerate launch -m``): the options of
    ``surge index dense``."""
    from ..cli.retrieval import index_dense

    index_dense.main(args=argv, prog_name="python -m surge_datasets.retrieval.encode")


if __name__ == "__main__":
    main()
